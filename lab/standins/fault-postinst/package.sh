# gpuctl-lab-fault-postinst: a package whose postinst fails while the node has
# /etc/gpuctl-lab-fault-postinst, as a DKMS build fails on a kernel without
# headers: dpkg leaves it half-configured (iF) until the cause is gone. For the
# package-fault lab test (tests/lab/os_services_test.cpp); nothing installs it
# otherwise. Debian only: rpm's %post failing does not fail the transaction.
PKG_NAME=gpuctl-lab-fault-postinst
PKG_VERSION=1.0-1
PKG_SUMMARY="gpuctl lab: a postinst that fails while /etc/gpuctl-lab-fault-postinst exists"
PKG_FORMATS=deb
PKG_REPO=ubuntu/universe
