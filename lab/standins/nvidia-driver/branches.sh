# The NVIDIA driver branches the lab offers and the release of each that the
# stand-ins carry; sourced by every nvidia-*/cuda-drivers* package.sh.
NVIDIA_BRANCHES="535 550 560 570 580"

nvidia_release() { # branch -> driver version
  case "$1" in
    535) echo 535.183.01 ;;
    550) echo 550.127.05 ;;
    560) echo 560.35.03 ;;
    570) echo 570.86.15 ;;
    580) echo 580.95.05 ;;
    *) return 1 ;;
  esac
}
