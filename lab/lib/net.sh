# shellcheck shell=bash
# Lab network: one Linux bridge per lab on the host (it holds <net>.1), one
# network namespace per node with a veth pair, the node end renamed eth0 and
# given <net>.<10+i>/24. Nodes get no default route: a node can reach the
# host's bridge address and the other nodes of its lab, nothing else.

# Picks this lab's /24 inside 198.18.0.0/15 from a hash of its name, skipping
# /24s that another lab's state records or that an interface already uses.
# Prints "a.b.c" (the first three octets).
choose_subnet() {
  local start i idx net used
  start=$((16#$(hash_hex "$LAB_NAME" 4) % 512))
  used=$(
    cat "$(dirname "$LAB_STATE")"/*/subnet 2>/dev/null
    ip -4 -o addr show 2>/dev/null | awk '{ split($4, a, "."); print a[1] "." a[2] "." a[3] }'
  )
  for ((i = 0; i < 512; i++)); do
    idx=$(((start + i) % 512))
    net=198.$((18 + idx / 256)).$((idx % 256))
    grep -qxF "$net" <<<"$used" || {
      echo "$net"
      return 0
    }
  done
  die "no free /24 left in 198.18.0.0/15"
}

net_up_bridge() {
  local net=$1
  # Guard: with a lab down, a client still dialling its addresses must get
  # "unreachable" here, not send packets out of the host's default route.
  # Each lab's connected /24 is more specific, so its own traffic is
  # unaffected. Deliberately left in place by `down`.
  if ! ip route show type unreachable 198.18.0.0/15 | grep -q .; then
    ip route add unreachable 198.18.0.0/15
  fi
  if ! ip link show "$LAB_BRIDGE" >/dev/null 2>&1; then
    ip link add "$LAB_BRIDGE" type bridge
  fi
  # No STP and no forwarding delay: ports are usable at once.
  ip link set "$LAB_BRIDGE" type bridge stp_state 0 forward_delay 0
  ip addr replace "$net.1/24" dev "$LAB_BRIDGE"
  ip link set "$LAB_BRIDGE" up
}

# Creates every node's netns and veth pair (one `ip -batch` on the host, one
# per node inside its netns: processes are what cost on a loaded 2-core box).
net_up_nodes() {
  local name addr i=0
  while IFS=$'\t' read -r name addr _; do
    i=$((i + 1))
    printf 'netns add %s\n' "$LAB_NETNS_PREFIX$name"
    printf 'link add %s type veth peer name eth0 netns %s\n' "$LAB_VETH_PREFIX$i" "$LAB_NETNS_PREFIX$name"
    printf 'link set %s master %s up\n' "$LAB_VETH_PREFIX$i" "$LAB_BRIDGE"
  done <"$LAB_TABLE" | ip -batch -
  while IFS=$'\t' read -r name addr _; do
    printf 'link set lo up\naddr add %s/24 dev eth0\nlink set eth0 up\n' "$addr" |
      ip -n "$LAB_NETNS_PREFIX$name" -batch -
  done <"$LAB_TABLE"
}

# This lab's namespaces that exist now. Matched by the node table's names,
# never by prefix alone: lab "a" must not match lab "a-b"'s "gl-a-b-node1".
lab_netns_list() {
  local node ns all
  all=$(ip netns list 2>/dev/null | awk '{ print $1 }')
  for node in $(table_nodes); do
    ns=$(node_netns "$node")
    grep -qxF "$ns" <<<"$all" && echo "$ns"
  done
  return 0
}

# Removes every netns, veth and the bridge of this lab (idempotent).
net_down() {
  local ns link
  for ns in $(lab_netns_list); do
    ip netns delete "$ns" 2>/dev/null || warn "could not delete netns $ns"
  done
  # Deleting a netns deletes its veth ends; catch any host end left over.
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{ print $2 }' | cut -d@ -f1); do
    [[ $link == "$LAB_VETH_PREFIX"* ]] || continue
    ip link delete "$link" 2>/dev/null || true
  done
  if ip link show "$LAB_BRIDGE" >/dev/null 2>&1; then
    ip link delete "$LAB_BRIDGE" || warn "could not delete bridge $LAB_BRIDGE"
  fi
}

# Pids of every process inside this lab's network namespaces.
net_pids() {
  local ns
  for ns in $(lab_netns_list); do
    ip netns pids "$ns" 2>/dev/null || true
  done
}
