# shellcheck shell=bash
# What `up` hands to gpuctl and to people: state/inventory.yaml (schema:
# docs/inventory.md), state/known_hosts (each node's own host key, so gpuctl
# connects without trust-on-first-use) and state/ssh_config (`ssh -F
# state/ssh_config worker1`).

# known_hosts lines: "name,address ssh-ed25519 KEY".
write_known_hosts() {
  local name addr key
  {
    while IFS=$'\t' read -r name addr _; do
      key=$(cut -d' ' -f1-2 "$(node_dir "$name")/upper/etc/ssh/ssh_host_ed25519_key.pub")
      printf '%s,%s %s\n' "$name" "$addr" "$key"
    done <"$LAB_TABLE"
  } >"$LAB_STATE/known_hosts.tmp"
  mv -f "$LAB_STATE/known_hosts.tmp" "$LAB_STATE/known_hosts"
}

write_ssh_config() {
  local name addr
  {
    printf '# Written by gpuctl-lab up: ssh -F %s NODE\n' "$LAB_STATE/ssh_config"
    while IFS=$'\t' read -r name addr _; do
      printf 'Host %s\n  HostName %s\n' "$name" "$addr"
    done <"$LAB_TABLE"
    printf 'Host *\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n' "$LAB_STATE/ssh/id_ed25519"
    printf '  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n  BatchMode yes\n  ConnectTimeout 10\n' \
      "$LAB_STATE/known_hosts"
  } >"$LAB_STATE/ssh_config"
}

yaml_str() { printf '"%s"' "$1"; }

write_inventory() {
  local profile=$1 name addr os roles model count _mem ib _faults nvswitch port dev p nfs_server
  nfs_server=$(awk -F'\t' '$4 ~ /(^|,)storage(,|$)/ { print $1; exit }' "$LAB_TABLE")
  [ -n "$nfs_server" ] || nfs_server=$(awk -F'\t' '$4 ~ /(^|,)master(,|$)/ { print $1; exit }' "$LAB_TABLE")
  {
    cat <<EOF
# Written by 'gpuctl-lab up' for lab "$LAB_NAME" (profile $profile) on $(date -u '+%F %T') UTC.
# Rewritten on every 'up'. Nodes are namespaces on this machine: see docs/lab.md.
cluster: $LAB_NAME
EOF
    [ "$profile" = slurm ] && echo "orchestrator: slurm"
    cat <<EOF
ssh:
  user: root
  identity_file: $LAB_STATE/ssh/id_ed25519
  known_hosts: $LAB_STATE/known_hosts
network:
  subnet: $(lab_net).0/24
nfs:
  server: $nfs_server
  exports:
    - path: /data/shared
  mounts:
    - export: /data/shared
      path: /data/shared
EOF
    if [ "$profile" = slurm ]; then
      # Debian 12's Slurm series, which lab/build-repo.sh mirrors for the
      # Ubuntu nodes and repackages for the Rocky ones.
      cat <<'EOF'
versions:
  slurm: "22.05"
slurm:
  partitions:
    - {name: a100, nodes: [worker1], default: true}
    - {name: h100, nodes: [worker2]}
EOF
    fi
    inventory_sources # repositories: and mirrors: on the lab's nginx (http.sh)
    inventory_fabric
    echo "nodes:"
    while IFS=$'\t' read -r name addr os roles model count _mem ib _faults nvswitch; do
      printf '  - name: %s\n    address: %s\n    os: %s\n    roles: [%s]\n' \
        "$name" "$addr" "$os" "${roles//,/, }"
      users_inventory_ssh "$name" # login user and sudo (users.sh)
      [ "$model" = "-" ] && [ "$ib" = "-" ] && continue
      printf '    hardware:\n'
      # nvswitch as the board is: the stand-ins need Fabric Manager only on one.
      [ "$model" != "-" ] && printf '      gpus:\n        model: %s\n        count: %s\n        nvswitch: %s\n' \
        "$(yaml_str "$model")" "$count" "$([ "${nvswitch:--}" = 1 ] && echo true || echo false)"
      if [ "$ib" != "-" ]; then
        printf '      ib:\n'
        for p in $ib; do
          IFS=: read -r dev port rate _ <<<"$p"
          printf '        - {device: %s, port: %s, rate: %s}\n' "$dev" "$port" "$rate"
        done
      fi
    done <"$LAB_TABLE"
  } >"$LAB_STATE/inventory.yaml.tmp"
  mv -f "$LAB_STATE/inventory.yaml.tmp" "$LAB_STATE/inventory.yaml"
}

# The lab's InfiniBand switches manage nothing: the first IB node runs
# OpenSM (fabric.subnet_manager), which gpuctl sets up, and with three IB
# nodes or more the second stands by. (With two, the second is a plain IB
# node, whose ports wait for the first's OpenSM.)
inventory_fabric() {
  local ib
  ib=$(awk -F'\t' '$8 != "-" { print $1 }' "$LAB_TABLE" | paste -sd ' ' -)
  [ -n "$ib" ] || return 0
  # shellcheck disable=SC2086 # node names, split into the positional parameters
  set -- $ib
  printf 'fabric:\n  subnet_manager: %s\n' "$1"
  [ $# -lt 3 ] || printf '  subnet_manager_standby: %s\n' "$2"
}

# fabric_prepare: STATE/ib-fabric, the lab's IB fabric that every node
# mounts. An inventory that names no subnet manager has managed switches, so
# the lab gives the fabric a switch's subnet manager (switch-sm: priority,
# GUID, LID, name), always answering; one that names a node runs OpenSM
# there, and until then every port stays Initializing.
fabric_prepare() {
  mkdir -p "$LAB_STATE/ib-fabric"
  if grep -q '^ *subnet_manager:' "$LAB_STATE/inventory.yaml"; then
    rm -f "$LAB_STATE/ib-fabric/switch-sm"
  else
    printf '15 0c42a1030099aa01 1 switch-sm\n' >"$LAB_STATE/ib-fabric/switch-sm"
  fi
}

# up --from INVENTORY: a lab that mirrors a site's inventory (docs/lab.md,
# "A lab from your own inventory"); the YAML work is lab/lib/from-inventory.py
# (python3-yaml).

# from_table INVENTORY [NET]: the node table for the inventory's nodes.
from_table() {
  /usr/bin/python3 "$LAB_LIB/from-inventory.py" table "$1" "${2:-$(lab_net)}"
}

# from_write INVENTORY: STATE/inventory.yaml (the site's inventory with the
# lab's addresses, ssh and package sources) and STATE/address-map.tsv.
from_write() {
  /usr/bin/python3 "$LAB_LIB/from-inventory.py" write "$1" "$LAB_STATE" "$(lab_net)" \
    "$(inventory_sources)" || die "up --from: could not write the lab's inventory"
  mv -f "$LAB_STATE/address-map.tsv.tmp" "$LAB_STATE/address-map.tsv"
  mv -f "$LAB_STATE/inventory.yaml.tmp" "$LAB_STATE/inventory.yaml"
}
