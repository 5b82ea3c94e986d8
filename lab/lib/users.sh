# shellcheck shell=bash
# Login users with real sudo (`gpuctl-lab up --sudo-users`), the way cloud
# GPU images are reached: an unprivileged user with the lab's key, and the
# host's own sudo (Debian's, seen through the node's overlay) to become root.
#
#   Ubuntu-like workers   ubuntu, NOPASSWD sudo, password locked ('!'), as
#                         cloud-init makes Ubuntu's default user
#   Rocky-like workers    rocky, sudo asks for the user's password: a real
#                         SHA-512 hash in the node's /etc/shadow, checked by
#                         sudo's PAM stack (pam_unix)
#   master, storage       root only, as before (the lab's own tooling logs
#                         in as root on every node either way)
#
# The password is generated once per lab into STATE/sudo-password (0600; kept
# until `down --purge`) and never printed, except by `gpuctl-lab env
# --sudo-password`, which prints the export line for scripts. The inventory
# names the variable (ssh.become_password_env), never the password.
#
# Who logs in where: STATE/users.tsv, written by `up` (users_plan), one node a
# line: name, user, sudo (nopasswd|password). The users are made inside the
# node at boot, before sshd starts, by gpuctl-lab-users.service running
# lab/lib/users-boot.sh with the node's real useradd and chpasswd, the way
# cloud-init makes the default user on a cloud image's first boot.

SUDO_PASSWORD_ENV=GPUCTL_LAB_SUDO_PASSWORD

# users_plan ENABLED: writes STATE/users.tsv (empty when not enabled) and,
# when needed, the lab's sudo password and its hash.
users_plan() {
  local enabled=$1 name os roles
  if ((enabled)); then
    need_tools visudo openssl useradd chpasswd
    [ -u "$(command -v sudo)" ] || die "sudo is not installed (run scripts/install-deps.sh lab)"
    users_password
  fi
  while IFS=$'\t' read -r name _ os roles _; do
    ((enabled)) || break
    [[ ,$roles, == *,worker,* ]] || continue
    case $os in
      ubuntu-*) printf '%s\tubuntu\tnopasswd\n' "$name" ;;
      rocky-*) printf '%s\trocky\tpassword\n' "$name" ;;
    esac
  done <"$LAB_TABLE" >"$LAB_STATE/users.tsv.tmp"
  mv -f "$LAB_STATE/users.tsv.tmp" "$LAB_STATE/users.tsv"
}

# The lab's sudo password (STATE/sudo-password) and its SHA-512 crypt hash
# (STATE/sudo-password.hash), made once. openssl reads the password on stdin,
# so it never shows in a process list.
users_password() {
  local f=$LAB_STATE/sudo-password pw
  if [ ! -s "$f" ]; then
    pw=$(head -c 48 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9')
    (umask 077 && printf '%s\n' "${pw:0:24}" >"$f.tmp") && mv -f "$f.tmp" "$f"
    rm -f "$f.hash"
  fi
  chmod 600 "$f"
  if [ ! -s "$f.hash" ]; then
    (umask 077 && openssl passwd -6 -stdin <"$f" >"$f.hash.tmp") && mv -f "$f.hash.tmp" "$f.hash"
  fi
}

# node_login NODE: sets L_USER and L_SUDO (nopasswd|password) from
# STATE/users.tsv; fails when the node has no login user.
node_login() {
  local name
  L_USER="" L_SUDO=""
  [ -f "$LAB_STATE/users.tsv" ] || return 1
  while IFS=$'\t' read -r name L_USER L_SUDO; do
    [ "$name" = "$1" ] && return 0
  done <"$LAB_STATE/users.tsv"
  L_USER="" L_SUDO=""
  return 1
}

# The node's `ssh:` line of inventory.yaml (nothing for a root node).
users_inventory_ssh() {
  node_login "$1" || return 0
  if [ "$L_SUDO" = password ]; then
    printf '    ssh: {user: %s, become: true, become_password_env: %s}\n' "$L_USER" "$SUDO_PASSWORD_ENV"
  else
    printf '    ssh: {user: %s, become: true}\n' "$L_USER"
  fi
}

# users_prepare UPPER: puts (or takes away) the node's login user in its disk
# (node loaded by load_node; called where disks are made): the list the boot
# unit reads, the sudoers rule (checked by visudo) and the unit itself.
users_prepare() {
  local u=$1 hash rule
  local files=(/etc/gpuctl-lab/users /etc/gpuctl-lab/users-boot /etc/sudoers.d/90-gpuctl-lab-users
    /etc/systemd/system/gpuctl-lab-users.service
    /etc/systemd/system/multi-user.target.wants/gpuctl-lab-users.service)
  if ! node_login "$N_NAME"; then
    # Off (again): the account stays in the node's /etc/passwd, like a user
    # an admin left behind, but without the sudo rule it cannot become root.
    local f
    for f in "${files[@]}"; do rm -f "$u$f"; done
    return 0
  fi
  if [ "$L_SUDO" = password ]; then
    hash=$(<"$LAB_STATE/sudo-password.hash")
    rule="$L_USER ALL=(ALL:ALL) ALL"
  else
    hash='!' # locked, as cloud-init leaves the default user: keys only
    rule="$L_USER ALL=(ALL:ALL) NOPASSWD:ALL"
  fi
  mkdir -p "$u/etc/gpuctl-lab" "$u/etc/sudoers.d" "$u/etc/systemd/system/multi-user.target.wants"
  chmod --reference=/etc/sudoers.d "$u/etc/sudoers.d"
  (umask 077 && printf '%s %s %s\n' "$L_USER" "$L_SUDO" "$hash" >"$u/etc/gpuctl-lab/users")
  install -m 755 "$LAB_LIB/users-boot.sh" "$u/etc/gpuctl-lab/users-boot"
  printf '# gpuctl-lab: the login user of this node (gpuctl-lab up --sudo-users).\n%s\n' "$rule" \
    >"$u/etc/sudoers.d/90-gpuctl-lab-users.tmp"
  chmod 440 "$u/etc/sudoers.d/90-gpuctl-lab-users.tmp"
  visudo -cqf "$u/etc/sudoers.d/90-gpuctl-lab-users.tmp" ||
    die "visudo refuses the sudoers rule for $L_USER on $N_NAME: $rule"
  mv -f "$u/etc/sudoers.d/90-gpuctl-lab-users.tmp" "$u/etc/sudoers.d/90-gpuctl-lab-users"
  cat >"$u/etc/systemd/system/gpuctl-lab-users.service" <<'EOF'
[Unit]
Description=gpuctl lab: the node's login user (as cloud-init makes the default user)
ConditionPathExists=/etc/gpuctl-lab/users
DefaultDependencies=no
After=local-fs.target gpuctl-lab-firstboot.service
Before=ssh.service multi-user.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/etc/gpuctl-lab/users-boot

[Install]
WantedBy=multi-user.target
EOF
  ln -sfn ../gpuctl-lab-users.service \
    "$u/etc/systemd/system/multi-user.target.wants/gpuctl-lab-users.service"
}

# `gpuctl-lab env` adds the password file's path; with --sudo-password also
# the export line of the password itself (for scripts: eval it, never echo).
users_env() {
  local f=$LAB_STATE/sudo-password
  if [ ! -s "$f" ]; then
    [ "${1:-}" != --sudo-password ] || die "lab '$LAB_NAME' has no sudo password (up --sudo-users)"
    return 0
  fi
  printf '%s=%q\n' LAB_SUDO_PASSWORD_FILE "$f"
  if [ "${1:-}" = --sudo-password ]; then
    printf 'export %s=%q\n' "$SUDO_PASSWORD_ENV" "$(<"$f")"
  fi
}
