# perftest: ib_send_bw and ib_write_bw, the RDMA bandwidth tests admins run
# between node pairs. The pair really meets over the lab network (TCP 18515,
# as perftest's out-of-band exchange); the bandwidth is a model of the two
# ends' IB port rates from the profile, so an ib-down fault shows.
PKG_NAME=perftest
PKG_VERSION=24.01.0-0.38.gd185c9b.2401055
PKG_SUMMARY="perftest RDMA bandwidth tests (stand-in ib_send_bw, ib_write_bw)"
PKG_DEB_DEPENDS="gpuctl-lab-common, python3"
PKG_RPM_REQUIRES="gpuctl-lab-common"
# Ubuntu's universe; Rocky's AppStream (MLNX_OFED ships its own too).
PKG_REPO_DEB=ubuntu/universe
PKG_REPO_RPM=rocky/AppStream
