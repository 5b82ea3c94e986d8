#!/bin/sh
# gpuctl-lab: runs once inside a Rocky-like node, on its first boot, before
# sshd starts (gpuctl-lab-firstboot.service): installs gpuctl-lab-rocky-base
# from the lab's Rocky BaseOS mirror (dnf, checking its signature with the
# Rocky key of the base layer) so the rpm database is not empty and later rpms
# resolve /bin/sh, bash, coreutils, systemd. Marks itself done only on
# success, so a node retries on its next boot (e.g. after the repository
# gained the base package). Ubuntu-like nodes need nothing: their base layer
# has fresh apt lists.
set -u
# shellcheck source=/dev/null
. /etc/gpuctl-lab/profile.env
case "$LAB_OS" in
  rocky-*)
    if ! rpm -q gpuctl-lab-rocky-base >/dev/null 2>&1; then
      dnf -y -q install gpuctl-lab-rocky-base || {
        echo "gpuctl-lab: could not install gpuctl-lab-rocky-base; rpm database left empty" >&2
        exit 0
      }
    fi
    ;;
esac
touch /etc/gpuctl-lab/firstboot.done
