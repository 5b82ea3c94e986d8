# The Rocky node's rpm database starts empty, yet its files are the host's
# (overlay of Debian's /). This package tells rpm what the base system already
# has, so dnf can install packages that require /bin/sh, systemd and friends.
# The lab installs it on the Rocky node's first boot (rpm -i, no dependencies).
PKG_NAME=gpuctl-lab-rocky-base
PKG_VERSION=9.4-1
PKG_SUMMARY="gpuctl lab: the Rocky Linux 9 base system the node's files already are"
PKG_FORMATS=rpm
PKG_PROVIDES="/bin/sh, /bin/bash, /usr/bin/sh, /usr/bin/bash, /usr/bin/python3,
  /sbin/ldconfig, /usr/sbin/ldconfig, /usr/bin/systemctl,
  bash, coreutils, systemd, systemd-udev, util-linux, shadow-utils, glibc,
  openssh-server, openssh-clients, procps-ng, kmod, which, sed, grep, gawk, tar,
  gzip, findutils, python3, dnf, rpm,
  rocky-release = 9.4, system-release = 9.4, system-release(releasever) = 9"
# Rocky 9's BaseOS.
PKG_REPO=rocky/BaseOS
