# Sourced by package.sh files that ship a library stand-in. A real (tiny) ELF
# shared object keeps ldconfig and loaders quiet; its one function answers the
# library's version query. Without a C compiler, a text placeholder does.
stub_lib() { # output-file soname c-source
  mkdir -p "$(dirname "$1")"
  if command -v cc >/dev/null; then
    printf '%s\n' "$3" | cc -shared -fPIC -O2 -s -Wl,-soname,"$2" -Wl,--build-id=none \
      -x c -o "$1" -
  else
    echo "gpuctl lab stand-in for $2 (no C compiler at build time)" >"$1"
  fi
}
