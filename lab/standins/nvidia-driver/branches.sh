# The NVIDIA driver releases the lab offers, and their package versions;
# sourced by every nvidia-*/cuda-drivers* package.sh, whose variants are these
# releases. Branch 550 has two, so that an inventory pinning the older one
# (versions.driver: "550.54.14") is seen to get it while the repositories
# offer the branch's newest, as a real archive does.
NVIDIA_RELEASES="535.183.01 550.54.14 550.127.05 560.35.03 570.86.15 580.95.05"

# nvidia_deb_version RELEASE: the version Ubuntu 22.04's restricted archive
# gives its driver packages (nvidia-driver-550 550.54.14-0ubuntu0.22.04.1).
nvidia_deb_version() { echo "$1-0ubuntu0.22.04.1"; }

# nvidia_rpm_version RELEASE: the epoch:version-release NVIDIA's RHEL 9
# repository gives its driver packages (nvidia-driver-cuda-3:550.54.14-1.el9);
# its cuda-drivers and Fabric Manager rpms are plain RELEASE-1.
nvidia_rpm_version() { echo "3:$1-1.el9"; }
