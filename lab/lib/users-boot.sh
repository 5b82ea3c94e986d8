#!/bin/sh
# gpuctl-lab: runs inside a node at every boot, before sshd starts
# (gpuctl-lab-users.service), when `up --sudo-users` gave the node a login
# user: makes the user with the node's own useradd (home from /etc/skel, a
# group of its own), sets its password hash in /etc/shadow (or '!': locked,
# key logins only) and lets the lab's key in, as cloud-init does for a cloud
# image's default user. Idempotent: a later boot only refreshes the hash and
# the key. /etc/gpuctl-lab/users: "USER nopasswd|password HASH" lines.
set -eu
while read -r user _ hash; do
  [ -n "$user" ] || continue
  if ! id -u "$user" >/dev/null 2>&1; then
    useradd --create-home --shell /bin/bash --comment "gpuctl lab login user" "$user"
  fi
  # -e: the hash as given; the password itself never reaches the node.
  printf '%s:%s\n' "$user" "$hash" | chpasswd -e
  home=$(getent passwd "$user" | cut -d: -f6)
  install -d -m 700 -o "$user" -g "$user" "$home/.ssh"
  install -m 600 -o "$user" -g "$user" /root/.ssh/authorized_keys "$home/.ssh/authorized_keys"
done </etc/gpuctl-lab/users
