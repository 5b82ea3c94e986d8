# opensm: the InfiniBand subnet manager MLNX OFED ships (its own build of
# OpenSM, beside its service opensmd). The stand-in binds a port of the node
# profile by GUID and, while it runs, answers as that rail's subnet manager
# on the lab's fabric: ports there go from Initializing to Active
# (gpuctl_lab.hold_subnet_manager; docs/standins.md). One build per OFED
# release series, in that series' repository.
pkg_variants() { printf '%s\n' 23.10 24.01; }
if [ -n "$PKG_VARIANT" ]; then
  PKG_NAME=opensm
  case $PKG_VARIANT in
    23.10) PKG_VERSION=5.17.2.MLNX20231105-1 ;;
    *) PKG_VERSION=5.18.0.MLNX20240128-1 ;;
  esac
  PKG_SUMMARY="OpenSM InfiniBand subnet manager (stand-in), MLNX_OFED $PKG_VARIANT"
  PKG_DEB_DEPENDS="gpuctl-lab-common, python3"
  PKG_RPM_REQUIRES="gpuctl-lab-common"
  PKG_REPO=ofed/$PKG_VARIANT
fi
pkg_stage() {
  mkdir -p "$1/usr/lib/gpuctl-lab"
  echo "${PKG_VERSION%-*}" >"$1/usr/lib/gpuctl-lab/opensm-version"
}
