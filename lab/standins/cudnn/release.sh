# The cuDNN release the stand-ins carry, built for each CUDA major (variant).
CUDNN_RELEASE=9.13.0.50
CUDNN_CUDA_MAJORS="12 13"
