# gpuctl prelude: prepended to every probe, change and verify script.
# POSIX sh. GPUCTL_OS_FAMILY (debian|rhel) is always set by gpuctl.
# Keep functions small: each is part of every script's digest.

# Facts (docs/playbooks.md#facts). A probe batch (`gpuctl plan`, check,
# apply's probes) runs every probe as a subshell of one shell, which first
# calls gpuctl_gather_facts: the installed packages, the states of the
# catalog's services, os-release and the kernel, each read once with one
# command. The helpers below (pkg_*, svc_*, unit_started_after, the
# containerd_* readers) answer from these with shell builtins; a script run
# on its own (a change, its verification) has no facts, so they ask the live
# system. Only read-only scripts may run after a gather: facts are never
# refreshed.

# gpuctl_gather_facts FAMILY: gathers the facts for OS family FAMILY (debian
# or rhel: GPUCTL_OS_FAMILY is each probe's own). A query that fails leaves
# its facts out, and the helpers ask the live system instead.
# shellcheck disable=SC2034 # GPUCTL_FACT_* are for the probes
gpuctl_gather_facts() {
  _gf_fam=$1 _gf_pkgs='' _gf_svcs='' _gf_ctrd='' _gf_batch=1
  # One line per package: the shell assignment of its "STATUS|VERSION"
  # (dpkg's Status, or "install ok installed" for rpm), concatenated as
  # dpkg-query -W and rpm -q print several packages of one name.
  case "$1" in
    debian) _gf=$(dpkg-query -W -f='${Package} ${Status}|${Version}\n' 2>/dev/null | _gpuctl_pkg_vars) ;;
    rhel) _gf=$(rpm -qa --qf '%{NAME} install ok installed|%{VERSION}-%{RELEASE}\n' 2>/dev/null | _gpuctl_pkg_vars) ;;
    *) _gf= ;;
  esac
  [ -z "$_gf" ] || { eval "$_gf" && _gf_pkgs=$1; }
  # ActiveState, UnitFileState, LoadState and ActiveEnterTimestamp of the
  # catalog's units (systemctl show prints one block per unit, in order),
  # and of the instances of gpuctl's own template units that start at boot
  # (gpuctl-opensm@DEVICE-PORT), found by their links without a process; an
  # instance not linked is asked live.
  set -- containerd docker kubelet nvidia-persistenced nvidia-fabricmanager dcgm-exporter prometheus nfs-server \
    chrony chronyd openibd opensmd opensm munge slurmctld slurmd ufw firewalld
  for _gfl in "$_gpuctl_unit_dir"/*.wants/gpuctl-*@*.service; do
    [ -L "$_gfl" ] || continue
    _gfl=${_gfl##*/} _gfl=${_gfl%.service}
    case " $* " in *" $_gfl "*) ;; *) set -- "$@" "$_gfl" ;; esac
  done
  if _gf=$(systemctl show --timestamp=unix -p ActiveState,UnitFileState,LoadState,ActiveEnterTimestamp -- "$@" 2>/dev/null); then
    _gf_a='' _gf_e='' _gf_l='' _gf_t=''
    while IFS= read -r _gfl; do
      case "$_gfl" in
        ActiveState=*) _gf_a=${_gfl#*=} ;;
        UnitFileState=*) _gf_e=${_gfl#*=} ;;
        LoadState=*) _gf_l=${_gfl#*=} ;;
        ActiveEnterTimestamp=*) _gf_t=${_gfl#*=} ;;
        "")
          [ $# -gt 0 ] || break
          _gpuctl_key "$1" && eval "_gfs_$_gk=\$_gf_a\|\$_gf_e\|\$_gf_l\|\${_gf_t#@}"
          _gf_a='' _gf_e='' _gf_l='' _gf_t=''
          shift ;;
      esac
    done <<EOF
$_gf

EOF
    # Every unit's block was read: the facts are whole.
    [ $# -gt 0 ] || _gf_svcs=1
  fi
  # os-release and the kernel, as variables, without sourcing the file
  # (its NAME, ID... would reach every probe).
  GPUCTL_FACT_OS_ID='' GPUCTL_FACT_OS_VERSION_ID=''
  while IFS='=' read -r _gfk _gfv || [ -n "$_gfk" ]; do
    _gfv=${_gfv#[\"\']} _gfv=${_gfv%[\"\']}
    case "$_gfk" in ID) GPUCTL_FACT_OS_ID=$_gfv ;; VERSION_ID) GPUCTL_FACT_OS_VERSION_ID=$_gfv ;; esac
  done </etc/os-release 2>/dev/null || true
  # A string, not a number: the shell's read gets it whole from /proc/sys.
  read -r GPUCTL_FACT_KERNEL </proc/sys/kernel/osrelease 2>/dev/null || GPUCTL_FACT_KERNEL=$(uname -r)
  # The GPUs and the IB ports, each read once for the several steps that
  # ask (nvidia-smi takes 0.1 s or more a run on a real board): gpu_query
  # and ib_read answer from these. A query that fails leaves them unset,
  # and each step then asks, and reports the failure, itself.
  unset _gf_gpu _gf_ib
  if command -v nvidia-smi >/dev/null 2>&1; then
    _gf_gpu=$(nvidia-smi --query-gpu="$_gpuctl_gpu_fields" --format=csv,noheader 2>/dev/null) || unset _gf_gpu
  fi
  if command -v ibstat >/dev/null 2>&1 && ib_read; then
    _gf_ib=$ib_table
  fi
  # A scratch directory for the batch, removed when its shell exits: for
  # containerd's effective configuration (three probes read it), a throwaway
  # GNUPGHOME for gpuctl's repository keys, and the repositories not set up
  # yet that the preflight reads (offer_scratch).
  _gf_tmp='' _gfr=''
  unset _gf_apt_policy
  for _gfl in /etc/apt/keyrings/gpuctl-* /etc/pki/rpm-gpg/RPM-GPG-KEY-gpuctl-*; do
    [ ! -e "$_gfl" ] || _gfr=1
  done
  _gf_tmp=$(mktemp -d 2>/dev/null) || { _gf_tmp=''; return 0; }
  trap 'rm -rf "$_gf_tmp"' EXIT
  # apt's view of the sources (the repos.* verifications read it).
  if [ "$_gf_fam" = debian ] && [ -n "$_gfr" ]; then
    _gf_apt_policy=$(apt-cache policy 2>/dev/null) || unset _gf_apt_policy
  fi
  if command -v containerd >/dev/null 2>&1; then
    if containerd config dump >"$_gf_tmp/containerd" 2>&1; then _gf_ctrd=ok; else _gf_ctrd=failed; fi
    _gf_ctrd_mtime=$(stat -c %Y /etc/containerd/config.toml 2>/dev/null) || _gf_ctrd_mtime=0
  fi
}

# in_batch: true in a probe batch (plan, check, apply's probes), whose
# scripts are read-only and share the gathered facts; false in a script run
# on its own (a change, its verification). A verification that reaches out
# to every node runs that sweep only on its own: on every plan and check it
# would cost the master a login per node (minutes at a thousand nodes) and
# every node a login.
in_batch() {
  [ -n "${_gf_batch:-}" ]
}

# Where the admin's and gpuctl's unit files and their links are.
_gpuctl_unit_dir=/etc/systemd/system

# _gpuctl_pkg_vars: package lines ("NAME STATUS|VERSION") on stdin as shell
# assignments of _gfp_<key> (_gpuctl_key's encoding); names it cannot encode
# are left out (their helpers then ask live).
_gpuctl_pkg_vars() {
  awk '{
    n = $1; k = ""
    for (i = 1; i <= length(n); i++) {
      c = substr(n, i, 1)
      if (c ~ /[A-Za-z0-9]/) k = k c
      else if (c == "-") k = k "_2d"; else if (c == ".") k = k "_2e"; else if (c == "+") k = k "_2b"
      else if (c == "_") k = k "_5f"; else if (c == ":") k = k "_3a"; else if (c == "@") k = k "_40"
      else { k = ""; break }
    }
    v = substr($0, length(n) + 2); p = index(v, "|")
    if (k != "" && p && index(v, "\047") == 0) { st[k] = st[k] substr(v, 1, p - 1); ver[k] = ver[k] substr(v, p + 1) }
  }
  END { for (k in st) printf "_gfp_%s=\047%s|%s\047\n", k, st[k], ver[k] }'
}

# _gpuctl_key NAME: sets _gk to NAME as a variable name's tail: letters and
# digits kept, - . + _ : @ / as _2d _2e _2b _5f _3a _40 _2f; fails on
# anything else.
_gpuctl_key() {
  _gk='' _gkr=$1
  while [ -n "$_gkr" ]; do
    _gkc=${_gkr%"${_gkr#?}"} _gkr=${_gkr#?}
    case "$_gkc" in
      [A-Za-z0-9]) _gk=$_gk$_gkc ;;
      -) _gk=${_gk}_2d ;; .) _gk=${_gk}_2e ;; +) _gk=${_gk}_2b ;;
      _) _gk=${_gk}_5f ;; :) _gk=${_gk}_3a ;; @) _gk=${_gk}_40 ;; /) _gk=${_gk}_2f ;;
      *) return 1 ;;
    esac
  done
  [ -n "$_gk" ]
}

# _gpuctl_pkg NAME: with the package facts of this node's family gathered,
# sets _gpv to NAME's "STATUS|VERSION" ("" when the database has no NAME);
# fails without facts (ask live).
_gpuctl_pkg() {
  [ -n "${_gf_pkgs:-}" ] && [ "$_gf_pkgs" = "$GPUCTL_OS_FAMILY" ] && _gpuctl_key "$1" || return 1
  eval "_gpv=\${_gfp_$_gk-}"
}

# pkg_facts: true in a batch that gathered this node's packages (a probe
# that would list packages another way may ask the facts instead).
pkg_facts() {
  [ -n "${_gf_pkgs:-}" ] && [ "$_gf_pkgs" = "$GPUCTL_OS_FAMILY" ]
}

# pkg_installed NAME: true when the package is installed.
pkg_installed() {
  if _gpuctl_pkg "$1"; then
    case "$_gpv" in *" ok installed|"*) return 0 ;; *) return 1 ;; esac
  fi
  case "$GPUCTL_OS_FAMILY" in
    # "install ok installed", or "hold ok installed" once apt-mark holds it.
    debian) dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q ' ok installed$' ;;
    rhel) rpm -q --quiet "$1" 2>/dev/null ;;
    *) echo "gpuctl: unknown OS family '$GPUCTL_OS_FAMILY'" >&2; return 2 ;;
  esac
}

# pkg_version NAME: the installed version, empty if not installed.
pkg_version() {
  if _gpuctl_pkg "$1"; then
    [ -z "$_gpv" ] || printf '%s' "${_gpv#*|}"
    return 0
  fi
  case "$GPUCTL_OS_FAMILY" in
    debian) dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true ;;
    # rpm -q prints "package X is not installed" on stdout: ask only then.
    rhel) if rpm -q --quiet "$1" 2>/dev/null; then rpm -q --qf '%{VERSION}-%{RELEASE}' "$1"; fi ;;
  esac
}

# pkg_ver NAME: sets pkg_v to what pkg_version prints, without the subshell
# of $(pkg_version NAME) in a batch.
# shellcheck disable=SC2034 # pkg_v is for the caller
pkg_ver() {
  if _gpuctl_pkg "$1"; then
    pkg_v=
    [ -z "$_gpv" ] || pkg_v=${_gpv#*|}
  else
    pkg_v=$(pkg_version "$1")
  fi
}

# pkg_held NAME: true when apt-mark holds NAME (dpkg's Status starts with
# "hold"; Debian family only).
pkg_held() {
  if _gpuctl_pkg "$1"; then
    case "$_gpv" in "hold "*) return 0 ;; *) return 1 ;; esac
  fi
  # shellcheck disable=SC2046 # "NAME WANT OK STATUS"
  set -- $(dpkg-query -W -f='${Package} ${Status}\n' "$1" 2>/dev/null)
  [ "${2:-}" = hold ]
}

# pkg_state NAME: nothing (status 0) when NAME is installed; else (status 1)
# one line saying what state it is in, from dpkg's Status field ("want ok
# state", dpkg-query(1)) with dpkg's two-letter abbreviation, e.g.
# "nvidia-dkms-550 is half-configured (iF): its postinst failed". What probes
# print for a package that is not (fully) installed.
pkg_state() {
  if _gpuctl_pkg "$1"; then _ps=${_gpv%|*}; else case "$GPUCTL_OS_FAMILY" in
    debian) _ps=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || _ps= ;;
    rhel) if rpm -q --quiet "$1" 2>/dev/null; then _ps="install ok installed"; else _ps=; fi ;;
  esac; fi
  # shellcheck disable=SC2086 # the three words of the field
  set -- "$1" $_ps
  case "${2:-}" in install) _pw=i ;; hold) _pw=h ;; deinstall) _pw=r ;; purge) _pw=p ;; *) _pw=u ;; esac
  case "${3:-}:${4:-}" in
    ok:installed) return 0 ;;
    reinstreq:*) echo "$1 needs reinstallation (${_pw}R, ${4:-}): dpkg was cut off or failed" ;;
    *:half-configured) echo "$1 is half-configured (${_pw}F): its postinst failed" ;;
    *:unpacked) echo "$1 is unpacked but not configured (${_pw}U)" ;;
    *:half-installed) echo "$1 is half-installed (${_pw}H): its unpacking failed or was cut off" ;;
    *:triggers-awaited | *:triggers-pending) echo "$1 is awaiting triggers (${4:-}): dpkg did not finish" ;;
    *:config-files) echo "$1 is not installed (only its configuration files remain)" ;;
    *) echo "$1 is not installed" ;;
  esac
  return 1
}

# Services. _gpuctl_svc UNIT: with the service facts gathered, sets _gsa,
# _gse, _gsl, _gst to UNIT's ActiveState, UnitFileState, LoadState and
# ActiveEnterTimestamp (seconds); fails for a unit gpuctl_gather_facts does
# not list, or without facts (ask live).
_gpuctl_svc() {
  [ -n "${_gf_svcs:-}" ] && _gpuctl_key "${1%.service}" || return 1
  eval "_gsv=\${_gfs_$_gk-}"
  [ -n "$_gsv" ] || return 1
  _gsa=${_gsv%%|*} _gsv=${_gsv#*|}
  _gse=${_gsv%%|*} _gsv=${_gsv#*|}
  _gsl=${_gsv%%|*} _gst=${_gsv#*|}
}

# svc_active UNIT: true when UNIT is active (systemctl is-active --quiet).
svc_active() {
  if _gpuctl_svc "$1"; then
    case "$_gsa" in active | reloading | refreshing) return 0 ;; *) return 3 ;; esac
  fi
  systemctl is-active --quiet "$1" 2>/dev/null
}

# svc_enabled UNIT: true when UNIT starts at boot (systemctl is-enabled --quiet).
svc_enabled() {
  if _gpuctl_svc "$1"; then
    case "$_gse" in enabled | enabled-runtime | static | alias | indirect | generated) return 0 ;; *) return 1 ;; esac
  fi
  systemctl is-enabled --quiet "$1" 2>/dev/null
}

# svc_state UNIT: sets svc_is_active and svc_is_enabled to what `systemctl
# is-active` and `systemctl is-enabled` print for UNIT ("" for a unit
# without a unit file, where is-enabled prints only an error).
# shellcheck disable=SC2034 # svc_is_* are for the caller
svc_state() {
  if _gpuctl_svc "$1"; then
    svc_is_active=$_gsa svc_is_enabled=$_gse
  else
    svc_is_active=$(systemctl is-active "$1" 2>/dev/null || true)
    svc_is_enabled=$(systemctl is-enabled "$1" 2>/dev/null || true)
  fi
}

# svc_enable [--now] UNIT: systemctl enable (and start, with --now),
# recording UNIT in the ledger when it was not enabled before, so a reset
# disables what gpuctl enabled and nothing the admin had.
svc_enable() {
  _sen=
  [ "$1" != --now ] || { _sen=--now; shift; }
  systemctl is-enabled -q "$1" 2>/dev/null || gpuctl_note unit "$1"
  # shellcheck disable=SC2086 # --now or nothing
  systemctl enable --quiet $_sen "$1"
}

# svc_exists UNIT: true when systemd knows UNIT (a unit file, or masked).
svc_exists() {
  if _gpuctl_svc "$1"; then [ "$_gsl" != not-found ]; return; fi
  systemctl cat "$1" >/dev/null 2>&1
}

# pkg_explain LOG: the lines of an apt, dpkg or dnf log that say why it
# failed (not the debconf and progress noise before them), to stderr.
pkg_explain() {
  grep -E '^(E|Error|Errors were encountered|dpkg: error|dpkg-deb: error)|error processing|trying to overwrite|No space left on device|returned error exit status|Unmet dependencies|^ *(Problem|- (package|nothing provides|conflicting|file .* conflicts))|Transaction check error|conflicts with file from package|Could not resolve|Failed to download|No match for argument|Unable to locate package|has no installation candidate' "$1" |
    awk '!seen[$0]++' | tail -n 20 >&2
}

# pkg_run LOG COMMAND...: runs COMMAND, its output on stdout as it comes and
# in LOG; on failure the explaining lines (pkg_explain) go to stderr last.
pkg_run() {
  _pl=$1
  shift
  { "$@" 2>&1; echo "$?" >"$_pl.rc"; } | tee "$_pl"
  _pr=$(cat "$_pl.rc" 2>/dev/null || echo 1)
  rm -f "$_pl.rc"
  [ "$_pr" = 0 ] || pkg_explain "$_pl"
  return "$_pr"
}

# pkg_repair: finishes what an interrupted or failed transaction left. One
# cheap check on a healthy node (dpkg --audit; rpm's duplicate list); only a
# node that needs it pays for `dpkg --configure -a` and `apt-get -f install`
# (unpacked, half-configured packages, unmet dependencies) or
# `dnf remove --duplicates` (an upgrade cut off between its two halves).
pkg_repair() {
  case "$GPUCTL_OS_FAMILY" in
    debian)
      # A dpkg killed mid-run leaves its journal in updates/ (what makes apt
      # say "dpkg was interrupted"); a failed one leaves what --audit lists.
      _pj=
      for _pu in /var/lib/dpkg/updates/*; do [ -e "$_pu" ] && _pj=1; done
      [ -n "$_pj" ] || [ -n "$(dpkg --audit 2>/dev/null)" ] || return 0
      echo "gpuctl: dpkg was interrupted or a package failed to configure; repairing" >&2
      pkg_run "$_pkl" dpkg --configure -a || true
      apt-get check -q >/dev/null 2>&1 && [ -z "$(dpkg --audit 2>/dev/null)" ] ||
        pkg_run "$_pkl" apt-get -f install -y -q -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confold ||
        return 1
      ;;
    rhel)
      [ -n "$(rpm -qa --qf '%{NAME}.%{ARCH}\n' 2>/dev/null | grep -v '^gpg-pubkey\.' | sort | uniq -d)" ] || return 0
      echo "gpuctl: an rpm transaction was cut off (duplicate packages); repairing" >&2
      pkg_run "$_pkl" dnf -y -q remove --duplicates || return 1
      ;;
  esac
}

# pkg_install NAME...: repairs an interrupted transaction (pkg_repair), then
# installs from the node's configured repositories. The package lists are
# refreshed only when the first try cannot find a package, so a converged
# node never pays for `apt-get update`. Exits the script on failure, the
# lines that explain it (pkg_explain) last on stderr.
pkg_install() {
  pkg_new "$@"
  _pkl=$(mktemp) || exit 1
  case "$GPUCTL_OS_FAMILY" in
    debian)
      export DEBIAN_FRONTEND=noninteractive
      # Waits for another apt (unattended-upgrades) rather than fail on its lock.
      pkg_repair || { rm -f "$_pkl"; exit 1; }
      set -- -y -q -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confold install "$@"
      # The first try's failure (an old package list) is no failure yet.
      apt-get "$@" >"$_pkl" 2>&1 && cat "$_pkl" || {
        apt-get update -q -o DPkg::Lock::Timeout=300 >/dev/null 2>&1
        pkg_run "$_pkl" apt-get "$@"
      } || { rm -f "$_pkl"; exit 1; }
      ;;
    rhel)
      pkg_repair || { rm -f "$_pkl"; exit 1; }
      pkg_run "$_pkl" dnf -y -q install "$@" || { rm -f "$_pkl"; exit 1; }
      ;;
  esac
  rm -f "$_pkl"
  pkg_note_new
}

# pkg_new ARG...: before an install, sets _pks to every installed package's
# name and _pkn to the packages among the install's arguments (NAME,
# NAME=VERSION on apt, NAME-VERSION on dnf; options skipped) that are not
# installed; pkg_note_new, after it, records in the ledger every package the
# install brought, its dependencies too ("package NAME"; _pkn's when the
# list cannot be read), and the admin's packages it took away ("removed
# NAME": chrony replaces systemd-timesyncd), for `reset --packages`.
pkg_new() {
  _pkn=
  for _pa in "$@"; do
    case "$_pa" in -*) continue ;; esac
    pkg_installed "${_pa%%=*}" || _pkn="$_pkn ${_pa%%=*}"
  done
  _pks=$(pkg_names)
}
pkg_note_new() {
  for _pa in $_pkn; do
    case "$GPUCTL_OS_FAMILY" in
      debian) _pa=$(dpkg-query -W -f='${Package}' "$_pa" 2>/dev/null) ;;
      rhel) _pa=$(rpm -q --qf '%{NAME}\n' "$_pa" 2>/dev/null | head -n 1) ;;
    esac
    [ -z "$_pa" ] || gpuctl_note package "$_pa"
  done
  _pka=$(pkg_names)
  _pkb=" $(printf '%s\n' "$_pks" | tr '\n' ' ') "
  if [ -n "$_pks" ]; then
    for _pa in $_pka; do
      case "$_pkb" in *" $_pa "*) ;; *) gpuctl_note package "$_pa" ;; esac
    done
  fi
  _pka=" $(printf '%s\n' "$_pka" | tr '\n' ' ') "
  for _pa in $_pks; do
    case "$_pka" in *" $_pa "*) continue ;; esac
    # One of gpuctl's own (an old driver branch) is not the admin's.
    grep -qxF "package $_pa" "${GPUCTL_LEDGER:-/var/lib/gpuctl/ledger}" 2>/dev/null ||
      gpuctl_note removed "$_pa"
  done
  _pkn='' _pks=''
}
# pkg_names: the installed packages' names, one a line.
pkg_names() {
  case "$GPUCTL_OS_FAMILY" in
    debian) dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 2>/dev/null | awk '$1 ~ /^.i/ { print $2 }' ;;
    rhel) rpm -qa --qf '%{NAME}\n' 2>/dev/null ;;
  esac
}

# file_is PATH CONTENT: true when PATH holds exactly CONTENT (plus newline).
file_is() {
  [ -f "$1" ] && file_read "$1" && [ "$file_text" = "$2" ]
}

# file_read PATH: sets file_text to what $(cat PATH) gives (trailing
# newlines dropped), with the shell's read: no process. Fails, file_text
# empty, when PATH cannot be read. For small files: the shell reads a byte
# at a time.
file_read() {
  file_text='' _fin=''
  [ -r "$1" ] || return 1
  while IFS= read -r _fil || [ -n "$_fil" ]; do
    file_text=$file_text$_fin$_fil _fin='
'
  done <"$1" || { file_text=''; return 1; }
  while :; do
    case "$file_text" in *'
') file_text=${file_text%?} ;; *) break ;; esac
  done
}

# Writes (docs/playbooks.md#writes). Every file gpuctl writes on a node goes
# through gpuctl_put: the new content goes to a temp file beside the target,
# is compared with what was meant to be written, gets the target's owner,
# group, mode and SELinux context, and only then replaces the target (mv, a
# rename in the same file system). The target's first version is kept once
# under GPUCTL_BACKUP_DIR. A failed write exits the script with the OS's own
# message and leaves the target as it was, so callers run these helpers in
# the script's main shell, never in $( ) or a pipeline.

# gpuctl_fail MESSAGE: removes the temp file of the write under way, says
# MESSAGE and exits the script.
gpuctl_fail() {
  [ -z "${_gt:-}" ] || rm -f "$_gt"
  _gt=
  echo "gpuctl: $1" >&2
  exit 1
}

# gpuctl_backup PATH: copies PATH (cp -a: owner, mode, times) to
# GPUCTL_BACKUP_DIR/PATH the first time gpuctl edits it; an existing backup
# is the admin's original and is never replaced.
gpuctl_backup() {
  _bk=${GPUCTL_BACKUP_DIR:-/var/lib/gpuctl/backup}$1
  [ -e "$1" ] && [ ! -e "$_bk" ] || return 0
  mkdir -p "${_bk%/*}" || gpuctl_fail "cannot back up $1 (to $_bk)"
  if ! { cp -a "$1" "$_bk.gpuctl-tmp.$$" && mv -f "$_bk.gpuctl-tmp.$$" "$_bk"; }; then
    rm -f "$_bk.gpuctl-tmp.$$"
    gpuctl_fail "cannot back up $1 (to $_bk)"
  fi
}

# The ledger (GPUCTL_LEDGER, default /var/lib/gpuctl/ledger): what gpuctl
# did on this node that `gpuctl reset` undoes, a line each, appended as it
# happens: "file created|replaced SHA256 PATH" for each write (the first
# line of a path says whether gpuctl created it or replaced the admin's,
# whose original gpuctl_backup keeps; the last one what gpuctl wrote),
# "hold NAME", "package NAME" (installed by gpuctl, not there before) and
# "unit NAME" (enabled by gpuctl, not enabled before).

# gpuctl_note KIND VALUE: appends "KIND VALUE" unless the ledger has it.
gpuctl_note() {
  _gl=${GPUCTL_LEDGER:-/var/lib/gpuctl/ledger}
  ! grep -qxF "$1 $2" "$_gl" 2>/dev/null || return 0
  if ! { mkdir -p "${_gl%/*}" && printf '%s %s\n' "$1" "$2" >>"$_gl"; }; then
    gpuctl_fail "cannot record '$1 $2' in $_gl"
  fi
}

# ledger_list KIND: the values of the ledger's KIND lines, once each, in
# the order gpuctl recorded them.
ledger_list() {
  [ -f "${GPUCTL_LEDGER:-/var/lib/gpuctl/ledger}" ] || return 0
  sed -n "s/^$1 //p" "${GPUCTL_LEDGER:-/var/lib/gpuctl/ledger}" | awk '!seen[$0]++'
}

# gpuctl_note_file PATH NEW: records a write of PATH (NEW non-empty: the
# file did not exist before it), keeping the kind its first line gave.
gpuctl_note_file() {
  _gl=${GPUCTL_LEDGER:-/var/lib/gpuctl/ledger}
  _gk=$(awk -v p="$1" '$1 == "file" { r = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", r); if (r == p) { print $2; exit } }' "$_gl" 2>/dev/null)
  [ -n "$_gk" ] || { _gk=replaced; [ -z "$2" ] || _gk=created; }
  _gs=$(sha256sum "$1") || gpuctl_fail "cannot read back $1"
  gpuctl_note "file $_gk" "${_gs%% *} $1"
}

# gpuctl_put PATH MODE COMMAND [ARG...]: replaces PATH with COMMAND's output
# (COMMAND must print the same on a second run: it runs again to check the
# temp file). MODE empty: PATH's mode (0644 for a new file).
gpuctl_put() {
  _gp=$1 _gm=$2
  shift 2
  mkdir -p "$(dirname "$_gp")" || gpuctl_fail "cannot write $_gp"
  _gt=$(mktemp "$(dirname "$_gp")/.$(basename "$_gp").gpuctl-XXXXXX") || gpuctl_fail "cannot write $_gp"
  "$@" >"$_gt" || gpuctl_fail "cannot write $_gp"
  # A short write (full file system, quota) shows as a difference.
  "$@" | cmp -s - "$_gt" || gpuctl_fail "cannot write $_gp: the written file differs from its content"
  _gnew=yes
  if [ -e "$_gp" ]; then
    _gnew=
    chown --reference="$_gp" "$_gt" || gpuctl_fail "cannot give $_gp's owner to its new content"
    chmod --reference="$_gp" "$_gt" || gpuctl_fail "cannot give $_gp's mode to its new content"
    if selinuxenabled 2>/dev/null; then
      chcon --reference="$_gp" "$_gt" || gpuctl_fail "cannot give $_gp's SELinux context to its new content"
    fi
  else
    _gm=${_gm:-0644}
  fi
  [ -z "$_gm" ] || chmod "$_gm" "$_gt" || gpuctl_fail "cannot write $_gp"
  gpuctl_backup "$_gp"
  mv -f "$_gt" "$_gp" || gpuctl_fail "cannot write $_gp"
  _gt=
  gpuctl_note_file "$_gp" "$_gnew"
  # A new file gets the context policy gives its path.
  if [ -n "$_gnew" ] && command -v restorecon >/dev/null 2>&1; then restorecon "$_gp" || true; fi
}

# write_file PATH CONTENT [MODE]: replaces PATH with CONTENT and a newline
# (gpuctl_put). cat, not the shell's printf, writes the file: it names the
# OS's error ("No space left on device").
write_file() {
  _wc=$2
  gpuctl_put "$1" "${3:-}" gpuctl_print_wc
}
gpuctl_print_wc() { printf '%s\n' "$_wc" | cat; }

# edit_file PATH COMMAND [ARG...]: replaces PATH with COMMAND's output, PATH
# given as COMMAND's last argument (e.g. edit_file /etc/fstab sed -E 's/a/b/'),
# keeping its owner and mode; a `sed -i` that cannot lose the file.
edit_file() {
  _ep=$1
  shift
  [ -f "$_ep" ] || gpuctl_fail "cannot edit $_ep: no such file"
  gpuctl_put "$_ep" "" "$@" "$_ep"
}

# dnf_held: what dnf holds back from upgrades, one name (or pattern) a line:
# the versionlock plugin's locks when it is there (versionlock.list lines are
# name-epoch:version-release.*), else what [main] of /etc/dnf/dnf.conf
# excludes (exclude= or excludepkgs=).
dnf_held() {
  if [ -f /etc/dnf/plugins/versionlock.conf ]; then
    sed -n 's/^\([^#!][^ ]*\)-[0-9]*:[^-]*-[^-]*$/\1/p' /etc/dnf/plugins/versionlock.list 2>/dev/null
  else
    # shellcheck disable=SC2020 # comma and blank each become a newline
    awk '/^\[/ { s = $0 } s == "[main]" && sub(/^[ \t]*exclude(pkgs)?[ \t]*=/, "")' /etc/dnf/dnf.conf 2>/dev/null |
      tr ', ' '\n\n'
  fi
}

# dnf_hold NAME...: holds the installed packages NAME at their versions. Rocky's
# own way is the versionlock plugin (AppStream); a site whose repositories
# lack it gets the same effect from excludepkgs in [main] of /etc/dnf/dnf.conf
# (what the admin excluded is kept), which dnf and dnf-automatic read on
# every run.
dnf_hold() {
  if [ ! -f /etc/dnf/plugins/versionlock.conf ]; then
    dnf -y -q install python3-dnf-plugin-versionlock >/dev/null 2>&1 || true
  fi
  if [ -f /etc/dnf/plugins/versionlock.conf ]; then
    dnf -q versionlock add "$@"
    return
  fi
  _dh_all=$({ dnf_held; printf '%s\n' "$@"; } | grep . | sort -u | tr '\n' ' ' | sed 's/ $//')
  _dh_src=/etc/dnf/dnf.conf
  [ -f "$_dh_src" ] || _dh_src=/dev/null
  gpuctl_put /etc/dnf/dnf.conf "" _dnf_with_excludes
}
# One excludepkgs line in [main] ($_dh_all; none when empty), the file's
# other lines as they are.
_dnf_with_excludes() {
  awk -v all="$_dh_all" '
    /^\[/ { s = $0 }
    s == "[main]" && /^[ \t]*exclude(pkgs)?[ \t]*=/ { next }
    { print }
    $0 == "[main]" && all != "" { print "excludepkgs=" all }' "$_dh_src"
  [ -z "$_dh_all" ] || grep -qx '\[main\]' "$_dh_src" || printf '[main]\n%s\n' "excludepkgs=$_dh_all"
}

# pkg_unheld PATTERN...: the installed packages matching the patterns (dpkg
# or rpm globs) that nothing holds against upgrades, one a line: not held by
# apt-mark (dpkg's selection "hold") on apt; on dnf not in dnf_held, whose
# excludepkgs entries may be globs themselves.
pkg_unheld() {
  case "$GPUCTL_OS_FAMILY" in
    debian)
      dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$@" 2>/dev/null |
        awk 'substr($1, 2, 1) == "i" && substr($1, 1, 1) != "h" { print $2 }' ;;
    rhel)
      _pu_held=$(dnf_held)
      rpm -qa --qf '%{NAME}\n' "$@" 2>/dev/null | sort -u | while IFS= read -r _pu; do
        for _pu_p in $_pu_held; do
          # shellcheck disable=SC2254 # the entry is a glob, as dnf reads it
          case "$_pu" in $_pu_p) continue 2 ;; esac
        done
        printf '%s\n' "$_pu"
      done ;;
  esac
}

# pkg_hold NAME...: holds the installed packages at their versions.
pkg_hold() {
  [ $# -gt 0 ] || return 0
  for _ph in "$@"; do gpuctl_note hold "$_ph"; done
  case "$GPUCTL_OS_FAMILY" in
    debian) apt-mark hold "$@" >/dev/null ;;
    rhel) dnf_hold "$@" ;;
  esac
}

# pkg_release PATTERN...: lifts apt-mark holds and dnf version locks on the
# installed packages matching the patterns, for a step that moves them on
# purpose (its hold step holds them again). dnf's excludepkgs stay: such a
# step installs with --disableexcludes=main.
pkg_release() {
  case "$GPUCTL_OS_FAMILY" in
    debian)
      _pr_held=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$@" 2>/dev/null |
        awk 'substr($1, 1, 1) == "h" && substr($1, 2, 1) == "i" { print $2 }')
      # shellcheck disable=SC2086 # a list of package names
      [ -z "$_pr_held" ] || apt-mark unhold $_pr_held >/dev/null ;;
    rhel)
      if [ -f /etc/dnf/plugins/versionlock.conf ]; then
        dnf -q versionlock delete "$@" >/dev/null 2>&1 || true
      fi ;;
  esac
}

# The fields the gather asks nvidia-smi for, every GPU a line: what the
# gpu.* steps ask about.
_gpuctl_gpu_fields=index,name,driver_version,persistence_mode,mig.mode.current,mig.mode.pending

# gpu_query FIELDS: prints what `nvidia-smi --query-gpu=FIELDS
# --format=csv,noheader` prints, and fails as it does, for FIELDS among
# _gpuctl_gpu_fields: in a batch from the gather's one query, with the
# shell alone; elsewhere (a change, its verification) nvidia-smi answers.
gpu_query() {
  if [ -z "${_gf_gpu+set}" ]; then
    nvidia-smi --query-gpu="$1" --format=csv,noheader
    return
  fi
  while IFS= read -r _gql; do
    [ -n "$_gql" ] || continue
    # index, name, driver_version, persistence_mode, MIG mode current, pending
    _gq1=${_gql%%, *} _gql=${_gql#*, }
    _gq2=${_gql%%, *} _gql=${_gql#*, }
    _gq3=${_gql%%, *} _gql=${_gql#*, }
    _gq4=${_gql%%, *} _gql=${_gql#*, }
    _gq5=${_gql%%, *} _gq6=${_gql#*, }
    _gqo='' _gqr=$1,
    while [ -n "$_gqr" ]; do
      case "${_gqr%%,*}" in
        index) _gqv=$_gq1 ;; name) _gqv=$_gq2 ;; driver_version) _gqv=$_gq3 ;;
        persistence_mode) _gqv=$_gq4 ;; mig.mode.current) _gqv=$_gq5 ;; mig.mode.pending) _gqv=$_gq6 ;;
        *) echo "gpu_query: ${_gqr%%,*} is not among the gathered fields" >&2; return 2 ;;
      esac
      _gqo=${_gqo:+$_gqo, }$_gqv _gqr=${_gqr#*,}
    done
    printf '%s\n' "$_gqo"
  done <<EOF
$_gf_gpu
EOF
}

# ib_read: sets ib_table to one line per port ibstat shows, "CA PORT STATE
# RATE GUID", from one ibstat for every question a script asks about ports
# (in a batch, the one the gather ran). Fails when ibstat does, ib_table
# empty and its first line in ib_err.
ib_read() {
  ib_table='' ib_err=''
  if [ -n "${_gf_ib+set}" ]; then
    ib_table=$_gf_ib
    return 0
  fi
  if ! _ibo=$(ibstat 2>&1); then
    ib_err=${_ibo%%"
"*}
    return 1
  fi
  ib_table=$(printf '%s\n' "$_ibo" | awk '
    /^CA / { ca = $2; gsub(/\047/, "", ca) }
    /^[ \t]+Port [0-9]+:/ { p = $2; sub(/:/, "", p); k = ca " " p; n[++c] = k
      st[k] = "?"; rt[k] = "?"; g[k] = "?" }
    /^[ \t]+State:/ { st[k] = $2 }
    /^[ \t]+Rate:/ { rt[k] = $2 }
    /^[ \t]+Port GUID:/ { g[k] = $3 }
    END { for (i = 1; i <= c; i++) print n[i], st[n[i]], rt[n[i]], g[n[i]] }')
}

# ib_cas: sets ib_ca_list to the CAs ibstat shows (what `ibstat -l` prints),
# one a line, from ib_read's table; empty when ibstat fails.
ib_cas() {
  ib_ca_list=''
  ib_read || return 0
  while read -r _ic _; do
    case "
$ib_ca_list
" in *"
$_ic
"*) ;; *) ib_ca_list=${ib_ca_list:+$ib_ca_list
}$_ic ;; esac
  done <<EOF
$ib_table
EOF
}

# ib_port CA PORT: sets ib_state, ib_rate and ib_guid from ib_table (ib_read),
# with the shell's read (no process); fails, all three empty, for a port
# ibstat did not show.
ib_port() {
  ib_state='' ib_rate='' ib_guid=''
  while read -r _ic _ip _is _ir _ig; do
    if [ "$_ic" = "$1" ] && [ "$_ip" = "$2" ]; then
      ib_state=$_is ib_rate=$_ir ib_guid=$_ig
      return 0
    fi
  done <<EOF
$ib_table
EOF
  return 1
}

# ofed_pkgs FUNCTION: calls FUNCTION (pkg_unheld, pkg_release) with the
# patterns of MLNX OFED's packages: its metapackage, its kernel modules'
# packages and their DKMS sources, its scripts, under OFED's own names on
# both families (mlnx-ofed-kernel-dkms, kmod-mlnx-ofa_kernel, knem-dkms ...).
ofed_pkgs() {
  "$1" 'mlnx-*' 'kmod-mlnx-*' ofed-scripts 'knem*' 'kmod-knem*' iser-dkms isert-dkms srp-dkms \
    kmod-iser kmod-isert kmod-srp
}

# auto_updates: " (what upgrades packages on its own)" for a hold step's
# message, or nothing: unattended-upgrades switched on (apt), an enabled
# dnf-automatic timer (dnf).
auto_updates() {
  case "$GPUCTL_OS_FAMILY" in
    debian)
      if pkg_installed unattended-upgrades &&
        [ "$(apt-config dump APT::Periodic::Unattended-Upgrade 2>/dev/null)" = 'APT::Periodic::Unattended-Upgrade "1";' ]; then
        echo " (unattended-upgrades runs daily)"
      fi ;;
    rhel)
      for _au in dnf-automatic.timer dnf-automatic-install.timer; do
        if svc_enabled "$_au"; then
          echo " ($_au is enabled)"
          return 0
        fi
      done ;;
  esac
}

# kernel_next: the kernel the node boots next, in kernel_next_v: grubby's
# default on dnf nodes (BLS entries name it), else the newest
# /boot/vmlinuz-* by version, which GRUB's generated menu boots by default
# on Debian and Ubuntu; the running kernel when /boot holds none.
kernel_next() {
  kernel_next_v=
  if [ "$GPUCTL_OS_FAMILY" = rhel ] && command -v grubby >/dev/null 2>&1; then
    kernel_next_v=$(grubby --default-kernel 2>/dev/null)
    kernel_next_v=${kernel_next_v#/boot/vmlinuz-}
  fi
  if [ -z "$kernel_next_v" ]; then
    # Read by the shell; only two kernels or more need sort.
    _kn_n=0 _kn_all=
    for _kn in /boot/vmlinuz-*; do
      [ -e "$_kn" ] || continue
      case "$_kn" in *-rescue-*) continue ;; esac
      kernel_next_v=${_kn#/boot/vmlinuz-} _kn_n=$((_kn_n + 1))
      _kn_all="$_kn_all$kernel_next_v
"
    done
    [ "$_kn_n" -lt 2 ] || kernel_next_v=$(printf '%s' "$_kn_all" | sort -V | tail -n 1)
  fi
  [ -n "$kernel_next_v" ] || kernel_next_v=${GPUCTL_FACT_KERNEL:-$(uname -r)}
}

# Headers of the running kernel, which a package that builds a module with
# DKMS at install (the NVIDIA driver) needs: without them its install fails
# (apt: the postinst's build) or leaves no module (dnf), and the node boots
# with no driver. Ubuntu's server image has them; minimal and cloud images,
# and Rocky (kernel-devel is not in a default install), do not. And the
# archive keeps them only for the kernels it still has: a node that runs an
# older kernel than its repositories' may find none.
# headers_have: the running kernel has them (DKMS's own test). Sets _hk to
# the running kernel and _hp to the package that holds its headers:
# linux-headers-K, or kernel-devel-K on dnf (which EL reads as name, version,
# release and arch).
headers_have() {
  _hk=${GPUCTL_FACT_KERNEL:-$(uname -r)}
  case "$GPUCTL_OS_FAMILY" in debian) _hp=linux-headers-$_hk ;; *) _hp=kernel-devel-$_hk ;; esac
  [ -d "/lib/modules/$_hk/build/include" ]
}

# headers_offered: after headers_have, sets _po to the versions of _hp the
# node is offered: apt's sources (pkg_offers); on dnf the node's
# repositories, from their metadata when dnf has it, else read into the
# batch's scratch directory (offer_dnf). Fails when that cannot be known.
headers_offered() {
  _po=''
  case "$GPUCTL_OS_FAMILY" in
    debian) pkg_offers "" "$_hp" ;;
    rhel)
      set -- --disableexcludes=all repoquery --qf '%{version}-%{release}' -- "$_hp"
      if ! _po=$(dnf -q -C "$@" 2>/dev/null); then
        [ -n "${_gf_tmp:-}" ] || return 1
        mkdir -p "$_gf_tmp/own-dnf/cache" "$_gf_tmp/own-dnf/persist" || return 1
        _po=$(offer_dnf "$_gf_tmp/own-dnf" "$@" 2>/dev/null) || return 1
      fi ;;
    *) return 1 ;;
  esac
}

# headers_need WHAT: the preflight of a DKMS build at install (WHAT: "the
# NVIDIA module"): refuses (exit 5) when the running kernel has no headers
# and the node's repositories offer none; returns when it has them, when
# they are offered, or when that cannot be known.
headers_need() {
  ! headers_have || return 0
  headers_offered || return 0
  [ -z "$_po" ] || return 0
  echo "the running kernel $_hk has no headers and the node's repositories offer none ($_hp): DKMS cannot build $1 for it; add a repository that has them, or boot a kernel they have headers for"
  exit 5
}

# headers_install: installs the running kernel's headers when it has none,
# before a package whose install builds a module with DKMS. Past a kernel
# hold's excludepkgs (kernel.hold) on dnf, which would hide them.
headers_install() {
  ! headers_have || return 0
  case "$GPUCTL_OS_FAMILY" in
    debian) pkg_install "$_hp" ;;
    rhel) pkg_install --disableexcludes=main "$_hp" ;;
  esac
}

# settle_tries N: how many times a verification that waits for something to
# settle looks (a device plugin advertising GPUs, an exporter's first
# scrape, a subnet manager's first sweep), a second apart or more: N during
# apply, where it follows changes of the same run (gpuctl sets GPUCTL_SETTLE
# for re-probes and verifications); once in plan and check, which report
# what is there now rather than wait for what may never come.
settle_tries() {
  if [ -n "${GPUCTL_SETTLE:-}" ]; then _st=$1; else _st=1; fi
}

# pkg_versions NAME PREFIX: the versions of NAME the repositories offer that
# are of the series PREFIX (version_in), newest first. Refreshes apt's lists
# once when they have none.
pkg_versions() {
  case "$GPUCTL_OS_FAMILY" in
    debian)
      set -- "$1" "$2" "$(apt-cache madison "$1" 2>/dev/null)"
      if [ -z "$3" ]; then
        apt-get update -q -o DPkg::Lock::Timeout=300 >/dev/null 2>&1
        set -- "$1" "$2" "$(apt-cache madison "$1" 2>/dev/null)"
      fi
      printf '%s\n' "$3" | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' ;;
    rhel) dnf -q repoquery --qf '%{version}-%{release}' "$1" 2>/dev/null ;;
  esac | while IFS= read -r v; do
    if [ -n "$v" ] && version_in "$2" "$v"; then echo "$v"; fi
  done | sort -u -V -r
}

# version_in SERIES VERSION: true when VERSION is SERIES or goes on from it
# with '.', '-' or '+' (2.21 holds 2.21.5-1+cuda12.4, not 2.210), or SERIES
# is empty.
version_in() {
  [ -n "$1" ] || return 0
  case "$2" in "$1" | "$1".* | "$1"-* | "$1"+*) return 0 ;; esac
  return 1
}

# cuda_build_pick major|any: of NVIDIA's versions on stdin (pkg_versions: newest
# first) that name the CUDA they were built for at their end (NCCL
# 2.21.5-1+cuda12.4, cuDNN 8 8.9.7.29-1+cuda12.2, rpm 8.9.7.29-1.cuda12.2),
# prints the one built for the inventory's CUDA, else the newest for its
# major (minor-version compatibility), else, with "any", the newest of all
# ("major": nothing).
cuda_build_pick() {
  awk -v want="cuda$GPUCTL_CUDA_VERSION" -v major="cuda${GPUCTL_CUDA_VERSION%%.*}." -v any="$1" '
    NF == 0 { next }
    { b = ""; if (match($0, /[+.]cuda[0-9.]+$/)) b = substr($0, RSTART + 1) }
    b == want && exact == "" { exact = $0 }
    index(b, major) == 1 && same == "" { same = $0 }
    first == "" { first = $0 }
    END {
      if (exact != "") print exact
      else if (same != "") print same
      else if (any == "any" && first != "") print first
    }'
}

# toml_get TABLE KEY: the value of KEY in [TABLE] of the TOML on stdin (''
# for top-level keys), string quotes (" or ') removed. Table names are compared
# without quotes and blanks, so plugins."a.b".c and plugins.'a.b'.c match
# plugins.a.b.c. Reads the layouts containerd and go-toml write, not all TOML.
toml_get() {
  awk -v t="$1" -v k="$2" '
    /^[ \t]*\[/ { h = $0; sub(/#.*/, "", h); gsub(/[][ \t"\047]/, "", h); cur = h; next }
    cur == t {
      line = $0; sub(/^[ \t]+/, "", line)
      if (index(line, k) != 1) next
      rest = substr(line, length(k) + 1)
      if (rest !~ /^[ \t]*=/) next
      sub(/^[ \t]*=[ \t]*/, "", rest); sub(/[ \t]+#.*$/, "", rest)
      if (rest ~ /^".*"$/ || rest ~ /^\047.*\047$/) rest = substr(rest, 2, length(rest) - 2)
      print rest; exit
    }'
}

# containerd_get TABLE KEY: KEY in the CRI plugin's TABLE (e.g.
# containerd.runtimes.runc.options SystemdCgroup) of containerd's effective
# configuration (`containerd config dump`: the file merged with the
# defaults); the CRI plugin's path is version 2's (containerd 1.x) or
# version 3's (2.x). Fails when containerd cannot load its configuration.
containerd_get() {
  containerd_dump || return 1
  case "$(containerd_toml '' version)" in
    3) _cri=plugins.io.containerd.cri.v1.runtime ;;
    *) _cri=plugins.io.containerd.grpc.v1.cri ;;
  esac
  containerd_toml "$_cri.$1" "$2"
}

# containerd_dump: reads `containerd config dump` (in a batch, what
# gpuctl_gather_facts read) for containerd_toml; fails as it fails, its last
# line on stderr.
containerd_dump() {
  case "${_gf_ctrd:-}" in
    ok) return 0 ;;
    failed) tail -n 1 "$_gf_tmp/containerd" >&2; return 1 ;;
  esac
  _dump=$(containerd config dump 2>&1) || { echo "$_dump" | tail -n 1 >&2; return 1; }
}

# containerd_toml TABLE KEY: toml_get on what containerd_dump read.
containerd_toml() {
  if [ "${_gf_ctrd:-}" = ok ]; then
    toml_get "$1" "$2" <"$_gf_tmp/containerd"
  else
    printf '%s\n' "$_dump" | toml_get "$1" "$2"
  fi
}

# containerd_restart_pending: true when /etc/containerd/config.toml changed
# after the running containerd started (what it runs is not what is written).
containerd_restart_pending() {
  if _gpuctl_svc containerd; then
    _since=${_gst:-0}
  else
    _since=$(systemctl show -p ActiveEnterTimestamp --value containerd 2>/dev/null)
    [ -n "$_since" ] && _since=$(date -d "$_since" +%s 2>/dev/null) || _since=0
  fi
  if [ -n "${_gf_ctrd:-}" ]; then
    _mtime=$_gf_ctrd_mtime
  else
    _mtime=$(stat -c %Y /etc/containerd/config.toml 2>/dev/null) || _mtime=0
  fi
  [ "$_mtime" -gt "$_since" ]
}

# _unit_active_since UNIT: sets _since to when UNIT last became active
# (seconds since the epoch); fails when it is not active.
_unit_active_since() {
  if _gpuctl_svc "$1"; then
    svc_active "$1" && [ -n "$_gst" ] || return 1
    _since=$_gst
  else
    systemctl is-active --quiet "$1" || return 1
    _since=$(date -d "$(systemctl show -p ActiveEnterTimestamp --value "$1")" +%s 2>/dev/null) || return 1
  fi
}

# unit_started_after UNIT FILE...: true when UNIT is active and entered that
# state no earlier than each FILE was last written, so it runs with the
# FILEs' current content (daemons read their key or config only at start).
unit_started_after() {
  _unit_active_since "$1" || return 1
  shift
  # One stat for the FILEs that exist (a missing one counts as never written).
  _fs=$#
  for _f in "$@"; do
    [ ! -e "$_f" ] || set -- "$@" "$_f"
  done
  shift "$_fs"
  [ $# -gt 0 ] || return 0
  for _f in $(stat -c %Y -- "$@" 2>/dev/null); do
    [ "$_f" -le "$_since" ] || return 1
  done
}

# dpkg_list PKG: sets _dl to dpkg's file list of PKG (PKG.list, or
# PKG:ARCH.list for a Multi-Arch package); fails when there is none.
dpkg_list() {
  for _dl in /var/lib/dpkg/info/"$1".list /var/lib/dpkg/info/"$1":*.list; do
    [ ! -e "$_dl" ] || return 0
  done
  _dl=
  return 1
}

# on_path NAME: sets on_path_file to the file the shell runs for NAME (the
# first executable regular file on PATH), looked up without a process; /bin
# and /sbin read as /usr's where they are links to it (merged /usr). Fails
# when there is none.
on_path() {
  on_path_file=
  _opi=$IFS
  IFS=:
  set -f
  for _opd in $PATH; do
    if [ -f "${_opd:-.}/$1" ] && [ -x "${_opd:-.}/$1" ]; then
      on_path_file=${_opd:-.}/$1
      break
    fi
  done
  set +f
  IFS=$_opi
  case "$on_path_file" in
    /bin/* | /sbin/*) if [ -L "${on_path_file%/*}" ]; then on_path_file=/usr$on_path_file; fi ;;
  esac
  [ -n "$on_path_file" ]
}

# pkg_runs TOOL PKG: true when PATH finds TOOL as package PKG installed it,
# looked up by the shell without running anything: on apt a file in PKG's
# dpkg file list and no newer than that list (not a binary copied over the
# package's after install), on dnf /usr/bin/TOOL. Otherwise sets
# pkg_runs_why to what PATH finds instead.
pkg_runs() {
  pkg_runs_why=
  if ! on_path "$1"; then
    pkg_runs_why="$1 is installed but not on PATH"
    return 1
  fi
  case "$GPUCTL_OS_FAMILY" in
    debian)
      _pro=
      if dpkg_list "$2"; then
        while IFS= read -r _prl; do
          if [ "$_prl" = "$on_path_file" ]; then _pro=1; break; fi
        done <"$_dl"
      fi
      if [ -z "$_pro" ]; then
        pkg_runs_why="$1 on PATH is $on_path_file, not the $2 package's file"
        return 1
      fi
      # shellcheck disable=SC3013 # -nt: dash and bash, the nodes' sh, have it
      if [ "$on_path_file" -nt "$_dl" ]; then
        pkg_runs_why="$on_path_file was changed after the $2 package installed it (newer than dpkg's file list)"
        return 1
      fi ;;
    rhel)
      if [ "$on_path_file" != "/usr/bin/$1" ]; then
        pkg_runs_why="$1 on PATH is $on_path_file, not the $2 package's /usr/bin/$1"
        return 1
      fi ;;
  esac
}

# pkg_installed_at PKG: when PKG was last installed or upgraded, in seconds
# since the epoch (dpkg rewrites the package's file list then; rpm keeps
# INSTALLTIME); nothing when it is not installed.
pkg_installed_at() {
  case "$GPUCTL_OS_FAMILY" in
    debian) dpkg_list "$1" && stat -c %Y "$_dl" ;;
    rhel) rpm -q --qf '%{INSTALLTIME}\n' "$1" 2>/dev/null | grep -m 1 -Ex '[0-9]+' ;;
  esac
}

# unit_started_after_install UNIT PKG...: true when UNIT is active and
# entered that state no earlier than each installed PKG was installed: a
# daemon that opens a library by path when it starts (slurmd and slurmctld
# open PMIx's) does not see one installed after.
unit_started_after_install() {
  _unit_active_since "$1" || return 1
  shift
  for _p in "$@"; do
    _at=$(pkg_installed_at "$_p") || continue
    [ "$_at" -le "$_since" ] || return 1
  done
}

# gpuctl_block FILE: the lines of gpuctl's block in FILE, between "# BEGIN
# gpuctl" and "# END gpuctl" (markers excluded); empty without one. Fails
# (status 2) when the markers do not pair up.
gpuctl_block() {
  # One pass of the shell's read (no process): sed's range
  # /^# BEGIN gpuctl$/,/^# END gpuctl$/ without its markers, and the counts.
  _gbb=0 _gbe=0 _gbin='' _gbo=''
  if [ -r "$1" ]; then
    while IFS= read -r _gbl || [ -n "$_gbl" ]; do
      case "$_gbl" in
        "# BEGIN gpuctl") _gbb=$((_gbb + 1)) _gbin=1 ;;
        "# END gpuctl") _gbe=$((_gbe + 1)) _gbin= ;;
        *) [ -z "$_gbin" ] || _gbo="$_gbo$_gbl
" ;;
      esac
    done <"$1"
  fi
  [ "$_gbb" = "$_gbe" ] || return 2
  printf '%s' "$_gbo"
}

# set_gpuctl_block FILE CONTENT: replaces gpuctl's block in FILE (the first
# one; later duplicates are dropped) or appends it; every other line is kept.
# Writes through gpuctl_put; exits the script when FILE's markers do not
# pair up (replacing would drop the admin's lines after a lone BEGIN).
set_gpuctl_block() {
  if ! gpuctl_block "$1" >/dev/null; then
    gpuctl_fail "$1 has unmatched '# BEGIN gpuctl' / '# END gpuctl' lines; fix them by hand"
  fi
  _sbf=$1
  [ -f "$1" ] || _sbf=/dev/null
  # Through a file, not the environment (awk -v would expand backslashes, and
  # Linux starts no program whose environment holds a string over 128 KiB:
  # every node's hosts line on a cluster of some thousands). The shell's
  # printf writes it, so no program starts with the content in hand.
  _sbb=$(mktemp) || gpuctl_fail "cannot write $1: no temporary file"
  if ! printf '# BEGIN gpuctl\n%s\n# END gpuctl\n' "$2" >"$_sbb"; then
    rm -f "$_sbb"
    gpuctl_fail "cannot write $1: the temporary file $_sbb failed"
  fi
  gpuctl_put "$1" "" awk -v block="$_sbb" '
    function put(  line) { while ((getline line < block) > 0) print line; close(block) }
    /^# BEGIN gpuctl$/ { if (!done) put(); done = 1; skip = 1; next }
    skip && /^# END gpuctl$/ { skip = 0; next }
    !skip { print }
    END { if (!done) put() }
  ' "$_sbf"
  rm -f "$_sbb"
}

# k8s_cluster_version CONF...: the version ("1.30.6") of the control plane
# the first existing kubeconfig of CONF... points at, from its /version (any
# client may read it); empty when none exists or the API server does not
# answer. k8s_minor VERSION: the minor of "1.31" or "1.31.2" (31).
k8s_cluster_version() {
  for _kc in "$@"; do
    [ -f "$_kc" ] || continue
    _kv=$(kubectl --kubeconfig "$_kc" --request-timeout=10s get --raw /version 2>/dev/null) || return 0
    printf '%s' "$_kv" | tr -d ' \n' | sed -n 's/.*"gitVersion":"v\([0-9][0-9.]*\)".*/\1/p'
    return 0
  done
}
k8s_minor() {
  _km=${1#*.}
  echo "${_km%%.*}"
}

# k8s_skew: whether this node may have the inventory's Kubernetes version
# (GPUCTL_KUBERNETES_VERSION) next to its cluster's control plane, under
# Kubernetes' skew policy (a kubelet is never newer than its API server).
# 0: yes (or no cluster); 3: once the control plane is one minor up
# (k8s.upgrade); 4: no, the control plane is more than one minor behind.
# Sets k8s_skew_why.
k8s_skew() {
  k8s_skew_why=
  _kcv=$(k8s_cluster_version /etc/kubernetes/admin.conf /etc/kubernetes/kubelet.conf)
  [ -n "$_kcv" ] || return 0
  _kcm=$(k8s_minor "$_kcv")
  _kwm=$(k8s_minor "$GPUCTL_KUBERNETES_VERSION")
  [ "$_kwm" -gt "$_kcm" ] || return 0
  if [ "$_kwm" -eq $((_kcm + 1)) ]; then
    k8s_skew_why="the control plane runs v$_kcv: this node follows once it is upgraded"
    return 3
  fi
  k8s_skew_why="the control plane runs v$_kcv, more than one minor behind $GPUCTL_KUBERNETES_VERSION: kubeadm upgrades one minor at a time (set versions.kubernetes to 1.$((_kcm + 1)), apply, then the next)"
  return 4
}

# drop_gpuctl_block FILE: removes gpuctl's block, markers and all, from
# FILE (every other line kept, through gpuctl_put); nothing to do when FILE
# has none. Exits the script when FILE's markers do not pair up.
drop_gpuctl_block() {
  if ! gpuctl_block "$1" >/dev/null; then
    gpuctl_fail "$1 has unmatched '# BEGIN gpuctl' / '# END gpuctl' lines; fix them by hand"
  fi
  [ -f "$1" ] && grep -qx '# BEGIN gpuctl' "$1" || return 0
  edit_file "$1" awk '
    /^# BEGIN gpuctl$/ { skip = 1; next }
    skip && /^# END gpuctl$/ { skip = 0; next }
    !skip { print }
  '
}

# firewall_ports: the ports this node opens to any source, one "PORT/PROTO"
# or "FIRST:LAST/PROTO" per word: SSH, and with Kubernetes the API server
# (master) and NodePorts (workers). Everything else the cluster needs (etcd,
# kubelet, VXLAN, slurmd and srun's callbacks, NCCL's and MPI's sockets on
# ports they pick at run time, NFS, dcgm-exporter, NTP) is reached only from
# firewall_sources. Reads GPUCTL_NODE_ROLES and GPUCTL_ORCHESTRATOR.
firewall_ports() {
  _p="22/tcp"
  if [ "$GPUCTL_ORCHESTRATOR" = kubernetes ]; then
    case " $GPUCTL_NODE_ROLES " in *" master "*) _p="$_p 6443/tcp" ;; esac
    case " $GPUCTL_NODE_ROLES " in *" worker "*) _p="$_p 30000:32767/tcp" ;; esac
  fi
  echo "$_p"
}

# firewall_sources: the addresses trusted for every port, one per word:
# GPUCTL_TRUSTED_SOURCES (gpuctl's list of the nodes' management and IB
# addresses, folded into CIDR blocks, and with Kubernetes the pod network),
# each host name in it resolved to its first address.
firewall_sources() {
  {
    for _a in $GPUCTL_TRUSTED_SOURCES; do
      case "$_a" in
        *:* | *[0-9] | *[0-9]/[0-9]*) [ -n "${_a##*[!0-9.:a-fA-F/]*}" ] && echo "$_a" && continue ;;
      esac
      getent ahosts "$_a" | awk '{ print $1; exit }'  # a host name
    done
  } | awk 'NF && !seen[$0]++' | tr '\n' ' '
}

# chrony_conf DRIFTFILE: the chrony.conf steps os.time-server and
# os.time-sync write. The master follows GPUCTL_NTP_SERVERS (the inventory's
# network.ntp_servers; pool.ntp.org without them) and serves the cluster
# subnet; every other node follows the master.
chrony_conf() {
  case " $GPUCTL_NODE_ROLES " in
    *" master "*)
      echo "# Managed by gpuctl (os.time-sync): the master keeps the cluster's time."
      if [ -n "${GPUCTL_NTP_SERVERS:-}" ]; then
        for ntp_server in $GPUCTL_NTP_SERVERS; do echo "server $ntp_server iburst"; done
      else
        echo "pool pool.ntp.org iburst"
      fi
      echo "# Serve the cluster even while no upstream server is reachable."
      echo "local stratum 10"
      echo "allow ${GPUCTL_SUBNET:-${GPUCTL_MASTER_ADDRESS%.*}.0/24}"
      ;;
    *)
      echo "# Managed by gpuctl (os.time-sync): every node follows the master."
      echo "server $GPUCTL_MASTER_ADDRESS iburst"
      ;;
  esac
  printf 'driftfile %s\nmakestep 1 3\nrtcsync\nlogdir /var/log/chrony\n' "$1"
}

# slurm_conf, slurm_gres_conf, slurm_cgroup_conf: the files step slurm.config
# writes, the same on every node, from GPUCTL_SLURM_* (the inventory),
# GPUCTL_MASTER_NAME/ADDRESS and GPUCTL_NODE_HARDWARE ("worker1 CPUs=64 ...
# RealMemory=515072", one line per worker, read from each worker).
slurm_conf() {
  cat <<EOF
# Written by gpuctl (step slurm.config) from the inventory; edits are replaced.
ClusterName=$GPUCTL_SLURM_CLUSTER_NAME
SlurmctldHost=$GPUCTL_MASTER_NAME($GPUCTL_MASTER_ADDRESS)
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=1
GresTypes=gpu
MpiDefault=none
EOF
  printf '%s\n' "$GPUCTL_SLURM_NODES" | awk -v hardware="${GPUCTL_NODE_HARDWARE:-}" '
    BEGIN {
      n = split(hardware, l, "\n")
      for (i = 1; i <= n; i++) { name = l[i]; sub(/ .*/, "", name); hw = l[i]; sub(/^[^ ]+ ?/, "", hw); have[name] = hw }
    }
    NF {
      print "NodeName=" $1 " NodeAddr=" $2 (have[$1] != "" ? " " have[$1] : "") \
        ($3 != "-" ? " Gres=" $3 : "") " State=UNKNOWN"
    }'
  printf '%s\n' "$GPUCTL_SLURM_PARTITIONS" | awk 'NF {
    line = "PartitionName=" $1 " Nodes=" $2 " Default=" $3 " MaxTime=" $4
    if ($5 != "-") line = line " DefaultTime=" $5
    print line " State=UP" }'
}

# GPUCTL_SLURM_NODES: "name address gres whole type indices" (params.cpp's
# SlurmNode). A node without MIG has one untyped record for its GPUs; on a node
# with MIG every record is typed: one per whole GPU, and one per MIG device
# naming its GPU's node and its two capability nodes (MultipleFiles), read
# from the node by slurm.config's input GPUCTL_MIG_DEVICES ("node gpu profile
# gi-minor ci-minor"). A malformed device line is left out; slurm.ready then
# finds the node's gres short.
slurm_gres_conf() {
  echo "# Written by gpuctl (step slurm.config) from the inventory; edits are replaced."
  echo "AutoDetect=off"
  printf '%s\n' "$GPUCTL_SLURM_NODES" | awk -v mig="${GPUCTL_MIG_DEVICES:-}" '
    BEGIN {
      # The device records of each node, gathered once (linear in the cluster).
      n = split(mig, dev, "\n")
      for (i = 1; i <= n; i++) {
        if (split(dev[i], f, " ") != 5) continue
        if (f[2] !~ /^[0-9]+$/ || f[3] !~ /^[0-9]+g\.[0-9]+gb(\+[a-z]+)?$/ || f[4] !~ /^[0-9]+$/ || f[5] !~ /^[0-9]+$/) continue
        recs[f[1]] = recs[f[1]] "NodeName=" f[1] " Name=gpu Type=" f[3] " MultipleFiles=/dev/nvidia" f[2] \
          ",/dev/nvidia-caps/nvidia-cap" f[4] ",/dev/nvidia-caps/nvidia-cap" f[5] "\n"
      }
    }
    NF && $5 == "-" && $4 > 0 {
      print "NodeName=" $1 " Name=gpu File=/dev/nvidia" ($4 > 1 ? "[0-" $4 - 1 "]" : "0")
    }
    NF && $5 != "-" {
      k = $6 == "-" ? 0 : split($6, whole, ",")
      for (i = 1; i <= k; i++) print "NodeName=" $1 " Name=gpu Type=" $5 " File=/dev/nvidia" whole[i]
      printf "%s", recs[$1]
    }'
}

slurm_cgroup_conf() {
  echo "# Written by gpuctl (step slurm.config); edits are replaced."
  # Slurm's cgroup/v2 plugin refuses a node where v1 hierarchies are mounted
  # as well (/proc/self/cgroup lists more than the 0:: line).
  if grep -qv '^0::' /proc/self/cgroup; then echo CgroupPlugin=cgroup/v1; else echo CgroupPlugin=autodetect; fi
}

# slurm_pkgs controller|node: the packages a Slurm controller or node runs,
# under the node's OS family's names; the client tools come with both.
slurm_pkgs() {
  case "$GPUCTL_OS_FAMILY:$1" in
    debian:controller) echo slurmctld slurm-client ;;
    debian:node) echo slurmd slurm-client ;;
    rhel:controller) echo slurm-slurmctld slurm ;;
    rhel:node) echo slurm-slurmd slurm ;;
  esac
}

# slurm_mpi_plugin NAME: true when this node's Slurm has the MPI plugin NAME
# (mpi_NAME.so in Slurm's plugin directory: EPEL's /usr/lib64/slurm,
# Debian's and Ubuntu's /usr/lib/<triplet>/slurm-wlm). A distribution's Slurm
# built without PMIx has no mpi_pmix.so.
slurm_mpi_plugin() {
  for _smp_dir in /usr/lib64/slurm /usr/lib/*-linux-gnu/slurm-wlm /usr/lib/slurm; do
    [ -e "$_smp_dir/mpi_$1.so" ] && return 0
  done
  return 1
}

# slurm_pmix_pkgs: the PMIx library Slurm's mpi_pmix plugin opens at run
# time (not a package dependency: Slurm loads it by path). Debian and Ubuntu
# open pmix2/lib/libpmix.so, a link only libpmix-dev ships; Rocky's pmix
# (AppStream) carries its library.
slurm_pmix_pkgs() {
  case "$GPUCTL_OS_FAMILY" in
    debian) echo libpmix2 libpmix-dev ;;
    rhel) echo pmix ;;
  esac
}

# slurm_pkgs_ok PKG...: true when each is installed and of the inventory's
# Slurm series (versions.slurm; any when empty); else says which is not.
slurm_pkgs_ok() {
  for p in "$@"; do
    v=$(pkg_version "$p")
    if [ -z "$v" ]; then
      pkg_state "$p"
      return 1
    fi
    if ! version_in "${GPUCTL_SLURM_VERSION:-}" "$v"; then
      echo "$p $v is installed (want Slurm $GPUCTL_SLURM_VERSION)"
      return 1
    fi
  done
}

# slurm_pkg_install PKG...: installs each at the newest version of the
# inventory's Slurm series the repositories offer, or fails naming what they
# offer; with no series, whatever the repositories have.
slurm_pkg_install() {
  if [ -z "${GPUCTL_SLURM_VERSION:-}" ]; then
    pkg_install "$@"
    return
  fi
  set -- "$@" --
  while [ "$1" != -- ]; do
    v=$(pkg_versions "$1" "$GPUCTL_SLURM_VERSION" | head -n 1)
    if [ -z "$v" ]; then
      offered=$(pkg_versions "$1" "" | paste -s -d ' ' -)
      echo "gpuctl: the repositories offer no $1 of Slurm $GPUCTL_SLURM_VERSION (versions.slurm); they have: ${offered:-none}" >&2
      return 1
    fi
    case "$GPUCTL_OS_FAMILY" in debian) set -- "$@" "$1=$v" ;; rhel) set -- "$@" "$1-$v" ;; esac
    shift
  done
  shift
  # A new series may be older than what is installed, and apt-mark may hold it.
  case "$GPUCTL_OS_FAMILY" in
    debian) pkg_install --allow-downgrades --allow-change-held-packages "$@" ;;
    rhel) pkg_install "$@" ;;
  esac
}

# registry_hosts_toml MIRROR SERVER: containerd's hosts.toml pulling through
# MIRROR, falling back to SERVER (docs/containers.md#registry-mirrors). The
# first line marks the file as gpuctl's.
registry_hosts_toml() {
  printf '# gpuctl: containers.registry-mirrors (inventory mirrors.registries)\n'
  printf 'server = "%s"\n\n[host."%s"]\n  capabilities = ["pull", "resolve"]\n' "$2" "$1"
}

# containerd_registry_config_path: the CRI plugin's registry config_path in
# containerd's effective configuration: the registry table of
# io.containerd.grpc.v1.cri (1.x) or io.containerd.cri.v1.images (2.x).
containerd_registry_config_path() {
  containerd_dump || return 1
  case "$(containerd_toml '' version)" in
    3) _t=plugins.io.containerd.cri.v1.images.registry ;;
    *) _t=plugins.io.containerd.grpc.v1.cri.registry ;;
  esac
  containerd_toml "$_t" config_path
}

# Package repositories (steps repos.*, docs/repositories.md). A repository is
# described by its step parameter GPUCTL_REPO_<NAME>: one key=value a line
# (name, type, uri/suites/components or baseurl/repo_gpgcheck, key,
# fingerprint; docs/playbooks.md#repositories).

# repo_get DESC KEY: KEY's value in the description DESC; @VERSION_ID@ stands
# for this node's /etc/os-release VERSION_ID (Mellanox's rhel9.4 directories).
repo_get() {
  repo_val "$1" "$2"
  printf '%s\n' "$_rv"
}

# repo_val DESC KEY: sets _rv to what repo_get prints, with shell builtins
# only (no subshell: the repos.* probes call it a dozen times).
repo_val() {
  _rv=
  case "
$1" in
    *"
$2="*)
      _rv=${1#"$2="}
      [ "$_rv" != "$1" ] || { _rv="
$1" && _rv=${_rv#*"
$2="}; }
      _rv=${_rv%%"
"*} ;;
  esac
  case "$_rv" in
    *@VERSION_ID@*)
      if [ -n "${GPUCTL_FACT_OS_VERSION_ID+set}" ]; then
        _rvid=$GPUCTL_FACT_OS_VERSION_ID
      else
        # shellcheck disable=SC1091 # the node's file, not ours
        _rvid=$(. /etc/os-release && echo "$VERSION_ID")
      fi
      while :; do
        case "$_rv" in
          *@VERSION_ID@*) _rv=${_rv%%@VERSION_ID@*}$_rvid${_rv#*@VERSION_ID@} ;;
          *) break ;;
        esac
      done ;;
  esac
}

# repo_paths NAME: sets _keyring and _source, the key and source files
# repository NAME has on this node.
repo_paths() {
  case "$GPUCTL_OS_FAMILY" in
    debian) _keyring=/etc/apt/keyrings/gpuctl-$1.gpg _source=/etc/apt/sources.list.d/gpuctl-$1.sources ;;
    rhel) _keyring=/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuctl-$1 _source=/etc/yum.repos.d/gpuctl-$1.repo ;;
  esac
}

# repo_source_text DESC [KEYRING]: the source file gpuctl writes: deb822
# signed by the repository's own keyring (apt), or a .repo checking every
# package's signature, and the metadata's where the vendor signs it (dnf).
# KEYRING instead of the installed one: the preflight's scratch copy.
repo_source_text() {
  repo_val "$1" name
  _rn=$_rv
  repo_paths "$_rn"
  [ -z "${2:-}" ] || _keyring=$2
  echo "# Written by gpuctl (step repos.$_rn) from the inventory; edits are replaced."
  case "$GPUCTL_OS_FAMILY" in
    debian)
      repo_val "$1" uri
      printf 'Types: deb\nURIs: %s\n' "$_rv"
      repo_val "$1" suites
      printf 'Suites: %s\n' "$_rv"
      repo_val "$1" components
      [ -z "$_rv" ] || printf 'Components: %s\n' "$_rv"
      printf 'Signed-By: %s\n' "$_keyring" ;;
    rhel)
      repo_val "$1" baseurl
      printf '[gpuctl-%s]\nname=gpuctl: %s\nbaseurl=%s\nenabled=1\ngpgcheck=1\n' \
        "$_rn" "$_rn" "$_rv"
      repo_val "$1" repo_gpgcheck
      [ "$_rv" != 1 ] || echo "repo_gpgcheck=1"
      printf 'gpgkey=file://%s\n' "$_keyring" ;;
  esac
}

# repo_key_fprs FILE: the primary-key fingerprints in the OpenPGP key FILE
# (armored or not), space-separated. A throwaway GNUPGHOME: nothing is
# imported anywhere, and no agent or keyboxd is left running.
repo_key_fprs() {
  repo_fprs "$1" || return 1
  printf '%s\n' "$_rfp"
}

# repo_fprs FILE: sets _rfp to what repo_key_fprs prints: one gpg, and in a
# batch the batch's scratch GNUPGHOME instead of a new one and the answer
# kept in a file there for the next probe that asks (a step's probe and its
# verification both check the key).
repo_fprs() {
  _rc=''
  if [ -n "${_gf_tmp:-}" ] && _gpuctl_key "$1"; then
    _rc=$_gf_tmp/fpr$_gk
    if [ -f "$_rc" ]; then
      _rfp=''
      read -r _rfp <"$_rc" || true
      return 0
    fi
    _rg=$_gf_tmp/gnupg
    [ -d "$_rg" ] || { mkdir -m 0700 "$_rg" && : >"$_rg/common.conf"; } || return 1
    _rk=$(GNUPGHOME=$_rg gpg --batch --with-colons --show-keys "$1" 2>/dev/null)
  else
    _rg=$(mktemp -d) || return 1
    : >"$_rg/common.conf"
    _rk=$(GNUPGHOME=$_rg gpg --batch --with-colons --show-keys "$1" 2>/dev/null)
    rm -rf "$_rg"
  fi
  # The fingerprint (field 10) of each "fpr" line right after a "pub" line.
  _rfp='' _rp=''
  while IFS=: read -r _r1 _r2 _r3 _r4 _r5 _r6 _r7 _r8 _r9 _r10 _rrest; do
    case "$_r1" in
      pub) _rp=1 ;;
      fpr) [ -z "$_rp" ] || _rfp=${_rfp:+$_rfp }$_r10 _rp= ;;
      *) ;;
    esac
  done <<EOF
$_rk
EOF
  [ -z "$_rc" ] || printf '%s\n' "$_rfp" >"$_rc"
}

# repo_check DESC: true when the repository's keyring holds exactly the
# pinned key and its source file is exactly what gpuctl writes; else prints
# the first thing that differs, in one line.
repo_check() {
  repo_val "$1" name
  _rn=$_rv
  repo_val "$1" fingerprint
  _rf=$_rv
  repo_paths "$_rn"
  if [ -z "$_rf" ]; then
    echo "repository $_rn has no pinned key: set repositories.$_rn.fingerprint in the inventory"
    return 1
  fi
  command -v gpg >/dev/null 2>&1 || { echo "gpg is not installed (it checks $_keyring)"; return 1; }
  [ -f "$_keyring" ] || { echo "$_keyring is missing"; return 1; }
  repo_fprs "$_keyring" || return 1
  _rh=$_rfp
  [ "$_rh" = "$_rf" ] || { echo "$_keyring holds key ${_rh:-none} (want $_rf)"; return 1; }
  [ -f "$_source" ] || { echo "$_source is missing"; return 1; }
  _rw=$(repo_source_text "$1")
  file_is "$_source" "$_rw" && return 0
  printf '%s\n' "$_rw" | awk -v f="$_source" '
    BEGIN { while ((getline l < f) > 0) have[++n] = l }
    { want[++m] = $0 }
    END {
      for (i = 1; i <= (m > n ? m : n); i++)
        if (have[i] != want[i]) { printf "%s line %d is \"%s\" (want \"%s\")\n", f, i, have[i], want[i]; exit }
    }'
  return 1
}

# repo_key_install NAME KEY FPR: the key repo_key_fetch checked, installed
# where the source points.
repo_key_install() {
  repo_paths "$1"
  _rt=$(mktemp -d) || return 1
  repo_key_fetch "$1" "$2" "$3" "$_rt" || { rm -rf "$_rt"; return 1; }
  # Checked and backed up like every write; a failed one exits the script.
  gpuctl_put "$_keyring" 0644 cat "$_rt/out"
  rm -rf "$_rt"
}

# repo_key_fetch NAME KEY FPR DIR: fetches KEY (a URL, or an absolute path on
# this node) into DIR and refuses it, naming both fingerprints, unless it
# holds the primary key FPR; leaves only that key in DIR/out: binary for
# apt's Signed-By, armored for dnf's gpgkey.
repo_key_fetch() {
  if [ -z "$3" ]; then
    echo "gpuctl: repository $1 has no pinned key: set repositories.$1.fingerprint in the inventory" >&2
    return 1
  fi
  _rt=$4
  case "$2" in
    /*) cp "$2" "$_rt/key" || return 1 ;;
    *) if ! curl -fsSL --retry 2 -o "$_rt/key" "$2"; then
         echo "gpuctl: cannot download the key of repository $1 from $2" >&2
         return 1
       fi ;;
  esac
  _rk=$(repo_key_fprs "$_rt/key")
  case " $_rk " in
    *" $3 "*) ;;
    *) echo "gpuctl: refusing the key of repository $1 from $2: its fingerprint is ${_rk:-unreadable (no OpenPGP key)}, the inventory pins $3" >&2
       return 1 ;;
  esac
  # Public keys only: gpg needs no agent for them, and one it started would
  # have to be killed again (gpgconf and three gpg-connect-agent runs a key).
  mkdir -m 0700 "$_rt/gnupg" && : >"$_rt/gnupg/common.conf"
  GNUPGHOME=$_rt/gnupg gpg --batch --quiet --no-autostart --import "$_rt/key" 2>/dev/null
  case "$GPUCTL_OS_FAMILY" in
    debian) GNUPGHOME=$_rt/gnupg gpg --batch --no-autostart --export "$3" >"$_rt/out" 2>/dev/null ;;
    rhel) GNUPGHOME=$_rt/gnupg gpg --batch --no-autostart --armor --export "$3" >"$_rt/out" 2>/dev/null ;;
  esac
  if [ ! -s "$_rt/out" ]; then
    echo "gpuctl: gpg could not export key $3 of repository $1" >&2
    return 1
  fi
}

# repo_refresh DESC: reads only this repository's package lists (never the
# node's others); fails with apt's or dnf's own lines when its signature is
# refused or it cannot be reached.
repo_refresh() {
  repo_paths "$(repo_get "$1" name)"
  case "$GPUCTL_OS_FAMILY" in
    debian) apt_update -o DPkg::Lock::Timeout=300 -o Dir::Etc::sourcelist="$_source" \
      -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 ;;
    rhel) dnf -y -q makecache --refresh --repo "gpuctl-$(repo_get "$1" name)" ;;
  esac
}

# apt_update ARG...: apt-get update with ARGs; fails with apt's own error
# lines on stderr, also when apt-get exits 0 having refused a signature or
# missed an index (it does when older lists exist).
apt_update() {
  _ro=$(apt-get update -q "$@" 2>&1)
  _rs=$?
  _rb=$(printf '%s\n' "$_ro" | grep -E '^(E:|W: (GPG error|Failed to fetch|An error occurred|Some index files))')
  if [ "$_rs" -ne 0 ] || [ -n "$_rb" ]; then
    printf '%s\n' "${_rb:-$_ro}" >&2
    return 1
  fi
}

# repo_seen DESC: true when the package manager has read the repository's
# lists; else says so.
repo_seen() {
  repo_val "$1" name
  _rn=$_rv
  case "$GPUCTL_OS_FAMILY" in
    debian)
      repo_val "$1" uri
      _ru=$_rv
      # In a batch, the policy gpuctl_gather_facts read.
      if [ -n "${_gf_apt_policy+set}" ]; then
        case "$_gf_apt_policy" in *" ${_ru%/}"*) _rs=0 ;; *) _rs=1 ;; esac
      else
        apt-cache policy 2>/dev/null | grep -qF " ${_ru%/}"
        _rs=$?
      fi
      if [ "$_rs" -ne 0 ]; then
        echo "apt-cache policy does not list ${_ru%/} (apt has not read repository $_rn)"
        return 1
      fi ;;
    rhel)
      if ! ls /var/cache/dnf/gpuctl-"$_rn"-*/repodata/repomd.xml >/dev/null 2>&1; then
        echo "dnf has no metadata of repository gpuctl-$_rn"
        return 1
      fi ;;
  esac
}

# repo_install DESC: the repository's key and source, then its lists. gpg and
# curl come from the distribution's archive when the node lacks them.
repo_install() {
  _rn=$(repo_get "$1" name)
  _rkey=$(repo_get "$1" key)
  _rneed=""
  command -v gpg >/dev/null 2>&1 || _rneed=gnupg
  [ "$GPUCTL_OS_FAMILY" != rhel ] || [ -z "$_rneed" ] || _rneed=gnupg2
  case "$_rkey" in /*) ;; *) command -v curl >/dev/null 2>&1 || _rneed="$_rneed curl" ;; esac
  # shellcheck disable=SC2086 # a list of package names
  [ -z "$_rneed" ] || pkg_install $_rneed || return 1
  repo_key_install "$_rn" "$_rkey" "$(repo_get "$1" fingerprint)" || return 1
  write_file "$_source" "$(repo_source_text "$1")"
  repo_refresh "$1"
}

# Preflight (docs/playbooks.md#preflight). A probe about to say "needs
# change" asks whether the change can succeed with what the node's
# repositories offer; when it cannot (the release the inventory names is not
# there, no Fabric Manager for the driver), the probe exits 5, refused, with
# one line naming the package, what is there and the inventory value to
# change: `plan` exits 1 and `apply` changes nothing on any node.

# pkg_offers REPO PKG: sets _po to the versions of PKG that REPO offers this
# node, newest first, one a line ("" when none). REPO is a repository's
# description (GPUCTL_REPO_<NAME>), or "" for the sources the node has of
# its own (apt only). A repository gpuctl has not set up here yet (a fresh
# node's first plan) is read into the batch's scratch directory, its key
# checked against the pinned fingerprint (offer_scratch): the node's own apt
# and dnf state is never touched. Fails when the answer cannot be known (the
# repository unreachable, apt never updated, outside a batch): the caller
# then refuses nothing, and the change speaks for itself. One answer is an
# answer though: a server that says its index is not there (HTTP 404); then
# _po_gone is the index's URL.
pkg_offers() {
  _po='' _pod='' _po_gone=''
  if [ -n "$1" ]; then
    repo_val "$1" name
    _pon=$_rv
    if ! { repo_check "$1" && repo_seen "$1"; } >/dev/null 2>&1; then
      if ! offer_scratch "$1"; then
        [ -z "$_ros" ] || [ ! -s "$_ros/gone" ] || read -r _po_gone <"$_ros/gone"
        return 1
      fi
      _pod=$_ros
    fi
  fi
  case "$GPUCTL_OS_FAMILY" in
    debian)
      # "nvidia-driver-550 | 550.54.14-0ubuntu0.22.04.1 | http://... Packages"
      _po=$(${_pod:+env "APT_CONFIG=$_pod/apt.conf"} apt-cache madison "$2" 2>/dev/null |
        awk -F'|' 'NF >= 3 { gsub(/ /, "", $2); print $2 }' | sort -u -V -r)
      if [ -z "$1" ] && [ -z "$_po" ]; then
        # Nothing at all from a node that never read its sources' lists (its
        # policy lists only dpkg's status) says nothing.
        _pol=${_gf_apt_policy-$(apt-cache policy 2>/dev/null)}
        case "$_pol" in *" Packages"*) ;; *) return 1 ;; esac
      fi ;;
    rhel)
      [ -n "$1" ] || return 1
      set -- --disableexcludes=all --repo "gpuctl-$_pon" repoquery --qf '%{version}-%{release}' -- "$2"
      if [ -n "$_pod" ]; then
        _po=$(offer_dnf "$_pod" "$@" 2>/dev/null) || return 1
      else
        # The metadata repo_seen found: never a download in a probe.
        _po=$(dnf -q -C "$@" 2>/dev/null) || return 1
      fi
      _po=$(printf '%s\n' "$_po" | sort -u -V -r) ;;
    *) return 1 ;;
  esac
}

# offer_scratch DESC: sets _ros to a directory of the batch's scratch where
# the repository DESC has been read (apt lists, dnf metadata), once a batch:
# the probes that ask after it share the one download. Fails outside a batch,
# without gpg (or curl for a key URL), or when the key or lists cannot be had.
offer_scratch() {
  _ros=''
  repo_val "$1" name
  [ -n "${_gf_tmp:-}" ] || return 1
  _ros=$_gf_tmp/offer-$_rv
  [ ! -e "$_ros/failed" ] || return 1
  [ ! -e "$_ros/ready" ] || return 0
  mkdir -p "$_ros" || return 1
  if offer_fetch "$1" "$_ros" >"$_ros/log" 2>&1; then
    : >"$_ros/ready"
    return 0
  fi
  : >"$_ros/failed"
  offer_index_gone "$1" >"$_ros/gone" 2>/dev/null
  return 1
}

# offer_index_gone DESC: prints the URL of the repository's index (apt's
# Release, dnf's repodata/repomd.xml) when its server answers 404 Not Found
# for it: a path naming a release or an OS the server does not have (MLNX
# OFED's repository is one per release). Anything else (no answer, another
# status, no curl) prints nothing: a mirror that is down is not a refusal.
offer_index_gone() {
  command -v curl >/dev/null 2>&1 || return 1
  case "$GPUCTL_OS_FAMILY" in
    debian)
      repo_val "$1" suites
      _oig_s=$_rv
      repo_val "$1" uri
      # A flat repository (suite "/" or "./", as MLNX OFED's) keeps it
      # beside its packages.
      case "$_oig_s" in
        / | ./) _oig=${_rv%/}/Release ;;
        */) _oig=${_rv%/}/${_oig_s%/}/Release ;;
        *) _oig=${_rv%/}/dists/$_oig_s/Release ;;
      esac ;;
    rhel)
      repo_val "$1" baseurl
      _oig=${_rv%/}/repodata/repomd.xml ;;
    *) return 1 ;;
  esac
  [ "$(curl -sS -o /dev/null -w '%{http_code}' --max-time 20 -- "$_oig")" = 404 ] || return 1
  printf '%s\n' "$_oig"
}

# offer_fetch DESC DIR: the repository's key (repo_key_fetch, pinned) and a
# source using it in DIR, then its lists or metadata there. apt takes the
# node's Acquire settings (proxies, certificates) but none of its apt.conf.d,
# whose update hooks (PackageKit, command-not-found) would act on the node.
offer_fetch() {
  repo_val "$1" name
  _ofn=$_rv
  repo_val "$1" key
  _ofk=$_rv
  repo_val "$1" fingerprint
  command -v gpg >/dev/null 2>&1 || return 1
  case "$_ofk" in /*) ;; *) command -v curl >/dev/null 2>&1 || return 1 ;; esac
  repo_key_fetch "$_ofn" "$_ofk" "$_rv" "$2" || return 1
  case "$GPUCTL_OS_FAMILY" in
    debian)
      mkdir -p "$2/lists/partial" "$2/cache/archives/partial" "$2/parts" || return 1
      repo_source_text "$1" "$2/out" >"$2/source.sources"
      {
        apt-config dump 2>/dev/null | grep '^Acquire::'
        printf 'Dir::Etc::main "/dev/null";\nDir::Etc::parts "%s/parts";\n' "$2"
        printf 'Dir::Etc::sourcelist "%s/source.sources";\nDir::Etc::sourceparts "-";\n' "$2"
        printf 'Dir::State::lists "%s/lists";\nDir::Cache "%s/cache";\n' "$2" "$2"
        printf 'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\nAPT::Sandbox::User "root";\n'
      } >"$2/apt.conf"
      (APT_CONFIG=$2/apt.conf && export APT_CONFIG && apt_update) ;;
    rhel)
      mkdir -p "$2/repos" "$2/cache" "$2/persist" || return 1
      repo_source_text "$1" "$2/out" >"$2/repos/gpuctl-$_ofn.repo"
      offer_dnf "$2" --repo "gpuctl-$_ofn" makecache ;;
    *) return 1 ;;
  esac
}

# offer_dnf DIR ARG...: dnf with the scratch repository in DIR (DIR/repos),
# or the node's own repositories when DIR has none, with DIR's own cachedir,
# logdir and persistdir, no plugins: the node's dnf state is not touched.
# -y: dnf takes the key for the metadata's signature (repo_gpgcheck) into the
# repository's keyring under the scratch cachedir, not rpm's.
offer_dnf() {
  _odd=$1
  shift
  [ ! -d "$_odd/repos" ] || set -- --setopt=reposdir="$_odd/repos" "$@"
  dnf -y -q --setopt=cachedir="$_odd/cache" --setopt=logdir="$_odd" \
    --setopt=persistdir="$_odd/persist" --disableplugin='*' "$@"
}

# offer_pick WANT: the versions in _po that are WANT or start with it
# (version_in), newest first.
offer_pick() {
  printf '%s\n' "$_po" | while IFS= read -r _opv; do
    if [ -n "$_opv" ] && version_in "$1" "$_opv"; then echo "$_opv"; fi
  done
}

# offer_refuse REPO PKG WHAT FIX: after pkg_offers, prints the refusal
# ("repository cuda offers no PKG WHAT (it has V1, V2, V3); FIX") and exits 5.
offer_refuse() {
  if [ -n "$1" ]; then
    repo_val "$1" name
    _orw="repository $_rv offers" _orp="it has"
  else
    _orw="the node's apt sources offer" _orp="they have"
  fi
  _orh='' _orn=0
  for _orv in $_po; do
    _orn=$((_orn + 1))
    [ "$_orn" -le 3 ] || { _orh="$_orh, ..."; break; }
    _orh=${_orh:+$_orh, }$_orv
  done
  if [ -n "$_orh" ]; then _orh="$_orp $_orh"; else _orh="no $2 at all"; fi
  echo "$_orw no $2${3:+ $3} ($_orh); $4"
  exit 5
}

# offer_need REPO PKG WANT FIX: refuses (offer_refuse) unless REPO offers PKG
# at WANT (version_in: a release or its prefix; "" any version); returns
# when it does, or when pkg_offers cannot tell.
offer_need() {
  if ! pkg_offers "$1" "$2"; then
    [ -z "$_po_gone" ] || offer_gone "$1" "$4"
    return 0
  fi
  [ -z "$(offer_pick "$3")" ] || return 0
  offer_refuse "$1" "$2" "$3" "$4"
}

# offer_gone REPO FIX: after pkg_offers found REPO's index missing on its
# server (_po_gone), prints the refusal and exits 5.
offer_gone() {
  repo_val "$1" name
  echo "repository $_rv has no index at $_po_gone (the server answers 404 Not Found); $2"
  exit 5
}

# managed_hosts: "name address" for each node in GPUCTL_HOSTS ("address
# name" lines), without the -ib names (the same hosts on the fabric).
managed_hosts() {
  while read -r _mh_a _mh_n _mh_rest; do
    case "$_mh_n" in "" | *-ib) ;; *) echo "$_mh_n $_mh_a" ;; esac
  done <<EOF
$GPUCTL_HOSTS
EOF
}

# host_names: the names of managed_hosts, one a line.
host_names() {
  managed_hosts | while read -r _hn_n _hn_rest; do echo "$_hn_n"; done
}

# ssh_reach KNOWN_HOSTS NAME...: root on this node logs in to each NAME with
# its own key (/root/.ssh/id_ed25519), the host key KNOWN_HOSTS holds and no
# prompt, as mpirun and Slurm's tools do; 16 logins at a time, so a thousand
# nodes take seconds, not minutes. Fails if one login did, and sets
# ssh_failed (how many) and ssh_bad (" NAME (ssh's last line)" for each,
# sorted by name).
ssh_reach() {
  _sr_kh=$1
  shift
  ssh_failed=0 ssh_bad=''
  [ $# -gt 0 ] || return 0
  # shellcheck disable=SC2016 # the inner script's own $0 (KNOWN_HOSTS) and $1 (NAME)
  _sr_out=$(printf '%s\n' "$@" | xargs -P 16 -n 1 sh -c '
    out=$(ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=5 \
      -o UserKnownHostsFile="$0" -i /root/.ssh/id_ed25519 "root@$1" true 2>&1 </dev/null) && exit 0
    last=$(printf "%s\n" "$out" | tail -n 1)
    printf "%s (%s)\n" "$1" "$last"' "$_sr_kh" | sort)
  while IFS= read -r _sr_l; do
    [ -n "$_sr_l" ] || continue
    ssh_failed=$((ssh_failed + 1))
    ssh_bad="$ssh_bad $_sr_l"
  done <<EOF
$_sr_out
EOF
  [ "$ssh_failed" -eq 0 ]
}
