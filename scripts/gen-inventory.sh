#!/usr/bin/env bash
# Writes an inventory of N nodes to stdout, for measuring gpuctl at scale
# (validate's time and memory; the bounds in include/gpuctl/util/input_file.h):
# one master and N-1 GPU workers, each written out in full as an admin would
# (address, os, roles, an 8-GPU block): about 160 bytes a node.
#
#   scripts/gen-inventory.sh 10000 > /tmp/inv10k.yaml
#   /usr/bin/time -v build/release/gpuctl validate /tmp/inv10k.yaml
#
# Addresses are 10.x.y.z from the node's number, so they stay unique up to
# 16 million nodes; nothing here contacts them.
set -euo pipefail

count=${1:-}
if ! [[ $count =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 NODES   (a positive number)" >&2
  exit 2
fi

cat <<'HEAD'
cluster: generated
ssh: {user: root}
versions: {driver_branch: "550", cuda: "12.4"}
nodes:
  - {name: master1, address: 10.255.255.1, os: ubuntu-22.04, roles: [master]}
HEAD
# awk, not a shell loop: a million nodes in seconds.
awk -v n="$count" 'BEGIN {
  for (i = 1; i < n; i++) {
    printf "  - name: gpu%07d\n    address: 10.%d.%d.%d\n", i, int(i / 65536) % 256, int(i / 256) % 256, i % 256
    printf "    os: ubuntu-22.04\n    roles: [worker]\n"
    printf "    hardware:\n      gpus: {model: \"NVIDIA H100 80GB HBM3\", count: 8}\n"
  }
}'
