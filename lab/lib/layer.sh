# shellcheck shell=bash
# Building a layer. Forks are what cost on a loaded 2-core machine, so the
# helpers below only record directories, whiteouts, opaque marks and links;
# layer_commit applies them in two processes: tar copies the host's mode and
# owner onto every directory made, python3 makes whiteouts (char device 0:0),
# opaque marks (xattr trusted.overlay.opaque=y) and symlinks.
LAYER_DIRS=()
LAYER_WHITEOUTS=()
LAYER_OPAQUE=()
LAYER_LINKS=()

# layer_dir LAYER /abs/dir: creates the directory (and parents) in the layer.
layer_dir() {
  local l=$1 path=$2 p
  [ -d "$l$path" ] || mkdir -p "$l$path"
  p=$path
  while [ -n "$p" ] && [ "$p" != / ]; do
    LAYER_DIRS+=("${p#/}")
    p=${p%/*}
  done
}

# layer_write LAYER /abs/file [MODE]: writes stdin to the file in the layer.
layer_write() {
  local l=$1 path=$2 mode=${3:-} content=""
  layer_dir "$l" "${path%/*}"
  IFS= read -r -d '' content || true
  printf '%s' "$content" >"$l$path"
  [ -z "$mode" ] || chmod "$mode" "$l$path"
}

whiteout() {
  layer_dir "$1" "${2%/*}"
  LAYER_WHITEOUTS+=("$1$2")
}

# opaque LAYER /abs/dir: the node sees this directory empty of host files.
opaque() {
  layer_dir "$1" "$2"
  LAYER_OPAQUE+=("$1$2")
}

# layer_link LAYER /abs/link TARGET
layer_link() {
  layer_dir "$1" "${2%/*}"
  LAYER_LINKS+=("$1$2" "$3")
}

layer_commit() {
  local l=$1 d
  local -A seen=()
  local dirs=()
  for d in "${LAYER_DIRS[@]}"; do
    [ -z "${seen[$d]:-}" ] && [ -d "/$d" ] && dirs+=("$d")
    seen[$d]=1
  done
  if ((${#dirs[@]})); then
    tar -C / --no-recursion -cf - "${dirs[@]}" | tar -C "$l" -xpf -
  fi
  /usr/bin/python3 - "${#LAYER_WHITEOUTS[@]}" "${LAYER_WHITEOUTS[@]}" \
    "${#LAYER_OPAQUE[@]}" "${LAYER_OPAQUE[@]}" "${LAYER_LINKS[@]}" <<'EOF'
import os, sys
args = sys.argv[1:]
n = int(args.pop(0))
for path in args[:n]:
    if os.path.lexists(path):
        os.unlink(path)
    os.mknod(path, 0o600 | 0o020000, os.makedev(0, 0))
args = args[n:]
n = int(args.pop(0))
for path in args[:n]:
    os.setxattr(path, "trusted.overlay.opaque", b"y")
args = args[n:]
for link, target in zip(args[0::2], args[1::2]):
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(target, link)
EOF
  LAYER_DIRS=()
  LAYER_WHITEOUTS=()
  LAYER_OPAQUE=()
  LAYER_LINKS=()
}
