# mlnx-ofed-all: NVIDIA (Mellanox) OFED's metapackage, here carrying the tools
# admins and gpuctl query: ibstat, ibv_devinfo, ibdev2netdev, sminfo, ofed_info. They
# answer for the profile's IB_PORTS. Two releases, so upgrades can be tried.
pkg_variants() { printf '%s\n' 23.10-2.1.3.1 24.01-0.3.3.1; }
if [ -n "$PKG_VARIANT" ]; then
  PKG_NAME=mlnx-ofed-all
  PKG_VERSION=$PKG_VARIANT
  PKG_SUMMARY="MLNX_OFED $PKG_VARIANT (stand-in InfiniBand tools)"
  PKG_DEB_DEPENDS="gpuctl-lab-common, python3"
  PKG_RPM_REQUIRES="gpuctl-lab-common"
  # The real tools' own package names, so a runbook may install those instead.
  PKG_PROVIDES="infiniband-diags, ibverbs-utils, mlnx-tools, ofed-scripts"
fi
pkg_stage() {
  echo "$PKG_VARIANT" >"$1/usr/lib/gpuctl-lab/ofed-release"
  # OFED's kernel symbols, where NVIDIA's DKMS build of nvidia-peermem finds
  # the peer-memory API (the real mlnx-ofed-kernel leaves them there).
  mkdir -p "$1/usr/src/ofa_kernel/default"
  printf '0x%s\tib_register_peer_memory_client\tdrivers/infiniband/core/ib_core\tEXPORT_SYMBOL\t\n' \
    "$(printf '%s' "$PKG_VARIANT" | sha256sum | cut -c1-8)" >"$1/usr/src/ofa_kernel/default/Module.symvers"
}
# The Mellanox OFED repository of the release series (latest-23.10, latest-24.01).
PKG_REPO=ofed/${PKG_VARIANT%%-*}
