# gpuctl-lab-fault-conflict: ships /usr/share/gpuctl-lab/fault-shared.txt,
# which gpuctl-lab-fault-owner ships too (no Replaces): its unpack fails while
# that package is installed. For the package-fault lab test.
PKG_NAME=gpuctl-lab-fault-conflict
PKG_VERSION=1.0-1
PKG_SUMMARY="gpuctl lab: a file conflict with gpuctl-lab-fault-owner"
PKG_FORMATS=deb
PKG_REPO=ubuntu/universe
