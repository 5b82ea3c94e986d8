# firewalld for the Rocky node: the daemon and firewall-cmd's port and source commands,
# recording the public and trusted zones (runtime and permanent) without filtering
# packets: the Rocky node has no nftables user space (docs/standins.md).
PKG_NAME=firewalld
PKG_VERSION=1.3.4-2
PKG_SUMMARY="firewalld (stand-in: records ports, filters nothing)"
PKG_FORMATS=rpm
# Rocky 9's BaseOS.
PKG_REPO=rocky/BaseOS
