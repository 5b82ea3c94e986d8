# The Python module every stand-in tool shares: reads the node profile and
# derives per-node values (UUIDs, GUIDs, serials) from the node name.
PKG_NAME=gpuctl-lab-common
PKG_VERSION=1.0-1
PKG_SUMMARY="gpuctl lab: shared code of the stand-in tools"
PKG_DEB_DEPENDS="python3"
# Lab plumbing every stand-in needs: in the distribution's archive, like a base library.
PKG_REPO_DEB=ubuntu/main
PKG_REPO_RPM=rocky/BaseOS
