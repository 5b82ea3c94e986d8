#!/bin/sh
# gpuctl-lab: runs once inside a Rocky-like node, on its first boot, before
# sshd starts (gpuctl-lab-firstboot.service): installs gpuctl-lab-rocky-base
# so the rpm database is not empty and later rpms resolve /bin/sh, bash,
# coreutils, systemd. Marks itself done only on success, so a node retries
# on its next boot (e.g. after the repository gained the base package).
# Ubuntu-like nodes need nothing: their base layer has fresh apt lists.
set -u
# shellcheck source=/dev/null
. /etc/gpuctl-lab/profile.env
case "$LAB_OS" in
  rocky-*)
    if ! rpm -q gpuctl-lab-rocky-base >/dev/null 2>&1; then
      rpmfile=$(find /srv/gpuctl-repo/rpm -name 'gpuctl-lab-rocky-base-*.rpm' 2>/dev/null | sort | tail -n 1)
      if [ -z "$rpmfile" ]; then
        echo "gpuctl-lab: gpuctl-lab-rocky-base is not in /srv/gpuctl-repo/rpm; rpm database left empty" >&2
        exit 0
      fi
      rpm -i "$rpmfile" || dnf -y -q install gpuctl-lab-rocky-base || exit 0
    fi
    ;;
esac
touch /etc/gpuctl-lab/firstboot.done
