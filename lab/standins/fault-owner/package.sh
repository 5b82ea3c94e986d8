# gpuctl-lab-fault-owner: ships /usr/share/gpuctl-lab/fault-shared.txt, the
# file gpuctl-lab-fault-conflict ships too, so installing that one fails with
# dpkg's "trying to overwrite" while this one is installed (a file conflict
# between two vendors' packages). For the package-fault lab test.
PKG_NAME=gpuctl-lab-fault-owner
PKG_VERSION=1.0-1
PKG_SUMMARY="gpuctl lab: owns the file gpuctl-lab-fault-conflict also ships"
PKG_FORMATS=deb
PKG_REPO=ubuntu/universe
