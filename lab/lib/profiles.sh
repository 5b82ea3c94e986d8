# shellcheck shell=bash
# Lab layouts. A profile (or --nodes N) becomes the node table
# (state/nodes.tsv, format in common.sh), from which everything else follows:
# disks, network, profile.env, inventory.yaml.
#
#   seed    master1 (master), worker1 + worker2 (8x A100 80GB, 2 IB ports at
#           200 Gb/s), storage1 (storage); all Ubuntu 22.04
#   mixed   seed, but worker2 runs Rocky Linux 9
#   slurm   seed, but worker2 runs Rocky Linux 9 with 8x H100 80GB HBM3 (two
#           GPU models for partitions, an apt and a dnf slurmd); the
#           inventory's orchestrator is slurm
#   nvswitch  master1, worker1 (Ubuntu, 8x A100 on NVSwitch), worker2 (Rocky
#           Linux 9, 8x H100 on NVSwitch): HGX boards that need Fabric Manager
#   --nodes N   master1 + worker1..worker<N-1> (GPU workers), Ubuntu unless
#           --rocky K (the last K workers run Rocky Linux 9)

A100_MODEL="NVIDIA A100-SXM4-80GB"
A100_MIB=81920
H100_MODEL="NVIDIA H100 80GB HBM3"
H100_MIB=81559
IB_DEFAULT="mlx5_0:1:200:Active mlx5_1:1:200:Active"
MAX_NODES=240

# row NAME INDEX OS ROLES [GPU_MODEL GPU_COUNT GPU_MIB IB NVSWITCH]
row() {
  local net
  net=$(lab_net)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$net.$((9 + $2))" "$3" "$4" \
    "${5:--}" "${6:--}" "${7:--}" "${8:--}" "-" "${9:--}"
}

# gpu_worker NAME INDEX OS [MODEL MIB [NVSWITCH]]
gpu_worker() {
  row "$1" "$2" "$3" worker "${4:-$A100_MODEL}" 8 "${5:-$A100_MIB}" "$IB_DEFAULT" "${6:-}"
}

# profile_table PROFILE NODES ROCKY: prints the node table.
profile_table() {
  local profile=$1 nodes=$2 rocky=$3 i os
  if [ -n "$nodes" ]; then
    if ! [[ $nodes =~ ^[0-9]+$ ]] || ((nodes < 1 || nodes > MAX_NODES)); then
      die "--nodes must be 1..$MAX_NODES"
    fi
    if ! [[ $rocky =~ ^[0-9]+$ ]] || ((rocky > nodes - 1)); then
      die "--rocky must be 0..$((nodes - 1))"
    fi
    row master1 1 ubuntu-22.04 master
    for ((i = 1; i < nodes; i++)); do
      os=ubuntu-22.04
      if ((i > nodes - 1 - rocky)); then os="rocky-9"; fi
      gpu_worker "worker$i" $((i + 1)) "$os"
    done
    return 0
  fi
  ((rocky == 0)) || die "--rocky goes with --nodes"
  case $profile in
    seed | mixed | slurm | nvswitch) ;;
    *) die "unknown profile '$profile' (seed, mixed, slurm, nvswitch)" ;;
  esac
  row master1 1 ubuntu-22.04 master
  if [ "$profile" = nvswitch ]; then
    gpu_worker worker1 2 ubuntu-22.04 "$A100_MODEL" "$A100_MIB" 1
    gpu_worker worker2 3 rocky-9 "$H100_MODEL" "$H100_MIB" 1
    return 0
  fi
  gpu_worker worker1 2 ubuntu-22.04
  case $profile in
    seed) gpu_worker worker2 3 ubuntu-22.04 ;;
    mixed) gpu_worker worker2 3 rocky-9 ;;
    slurm) gpu_worker worker2 3 rocky-9 "$H100_MODEL" "$H100_MIB" ;;
  esac
  row storage1 4 ubuntu-22.04 storage
}

# Applies "--fault NODE:FAULT" options (FAULTS column) to a table on stdin.
apply_faults() {
  local spec node fault
  local -A faults=()
  for spec in "$@"; do
    node=${spec%%:*}
    fault=${spec#*:}
    if [ "$node" = "$spec" ] || [ -z "$fault" ]; then
      die "--fault wants NODE:FAULT, got '$spec'"
    fi
    check_fault "$fault"
    faults[$node]="${faults[$node]:+${faults[$node]} }$fault"
  done
  awk -F'\t' -v OFS='\t' -v specs="$(for node in "${!faults[@]}"; do printf '%s=%s\n' "$node" "${faults[$node]}"; done)" '
    BEGIN { n = split(specs, lines, "\n"); for (i = 1; i <= n; i++) { p = index(lines[i], "="); if (p) f[substr(lines[i], 1, p - 1)] = substr(lines[i], p + 1) } }
    { if ($1 in f) { $9 = f[$1]; used[$1] = 1 } print }
    END { for (k in f) if (!(k in used)) { print "gpuctl-lab: error: --fault names unknown node " k > "/dev/stderr"; exit 1 } }'
}

# Faults the stand-ins understand; others are accepted with a warning, so a
# stand-in can grow a fault before this list does.
KNOWN_FAULTS="gpu-missing=N ib-down=DEVICE[:PORT] driver-load-fail kubelet-stall cni-stall"
check_fault() {
  case $1 in
    gpu-missing=[0-9]* | ib-down=mlx5_[0-9]* | driver-load-fail | kubelet-stall | cni-stall) ;;
    *)
      [[ $1 =~ ^[a-z0-9-]+(=[A-Za-z0-9_.:-]+)?$ ]] || die "bad fault '$1' (known: $KNOWN_FAULTS)"
      warn "fault '$1' is not one the lab knows ($KNOWN_FAULTS); passing it on"
      ;;
  esac
}
