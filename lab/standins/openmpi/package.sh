# openmpi-bin: mpirun/mpiexec that start one process per slot over ssh, as
# Open MPI's rsh launcher does, with the OMPI_COMM_WORLD_* variables a real
# rank gets. The stand-in nccl-tests meet through it across nodes (rank 0's
# address in GPUCTL_LAB_MPI_ROOT, where real MPI uses its own wire-up).
PKG_NAME=openmpi-bin
PKG_RPM_NAME=openmpi
PKG_VERSION=4.1.4-3
PKG_SUMMARY="Open MPI launcher (stand-in mpirun over ssh)"
PKG_DEB_DEPENDS="gpuctl-lab-common, python3, openssh-client"
PKG_RPM_REQUIRES="gpuctl-lab-common"
# Ubuntu's universe; Rocky's AppStream.
PKG_REPO_DEB=ubuntu/universe
PKG_REPO_RPM=rocky/AppStream
