# The Python module every stand-in tool shares: reads the node profile and
# derives per-node values (UUIDs, GUIDs, serials) from the node name.
PKG_NAME=gpuctl-lab-common
PKG_VERSION=1.0-1
PKG_SUMMARY="gpuctl lab: shared code of the stand-in tools"
PKG_DEB_DEPENDS="python3"
