# firewalld for the Rocky node: the daemon and firewall-cmd's port commands,
# recording the public zone's ports (runtime and permanent) without filtering
# packets: the Rocky node has no nftables user space (docs/standins.md).
PKG_NAME=firewalld
PKG_VERSION=1.3.4-1
PKG_SUMMARY="firewalld (stand-in: records ports, filters nothing)"
PKG_FORMATS=rpm
