# NCCL releases the stand-ins carry, in NVIDIA's version format
# (<nccl>-<rev>+cuda<X.Y>); each is a version of the same package names.
NCCL_RELEASES="2.21.5-1+cuda12.4 2.23.4-1+cuda12.6 2.26.2-1+cuda12.8 2.27.7-1+cuda13.0"
