# Slurm and MUNGE for the Rocky-like nodes, under the names Rocky 9 and EPEL use
# (munge, munge-libs, slurm, slurm-libs, slurm-slurmctld, slurm-slurmd, and the
# base libraries hwloc-libs and compat-lua-libs; pmix and libevent, which
# Slurm's PMIx plugin loads), carrying the real binaries
# of Debian 12's packages (debs.sh), so the real munged, slurmctld and slurmd
# run on Rocky nodes too. Not a simulation: a repackaging (docs/standins.md).
source "$PKG_DIR/debs.sh"
pkg_variants() {
  printf '%s\n' munge-libs munge hwloc-libs compat-lua-libs slurm-libs slurm slurm-slurmctld \
    slurm-slurmd libevent pmix
}

PKG_FORMATS=rpm
PKG_ARCH=amd64
if [ -n "$PKG_VARIANT" ]; then
  PKG_NAME=$PKG_VARIANT
  case $PKG_VARIANT in
    munge*) PKG_VERSION=$(el_version munge) ;;
    hwloc-libs) PKG_VERSION=$(el_version libhwloc15) ;;
    compat-lua-libs) PKG_VERSION=$(el_version liblua5.1-0) ;;
    slurm*) PKG_VERSION=$(el_version slurmd) ;;
    libevent)
      PKG_VERSION=$(el_version libevent-core-2.1-7)
      # "2.1.12-stable-8": rpm has no '-' in Version.
      PKG_VERSION_RPM=${PKG_VERSION/-stable/}
      ;;
    pmix) PKG_VERSION=$(el_version libpmix2) ;;
  esac
  [ -n "$PKG_VERSION" ] || exit 1
  case $PKG_VARIANT in
    munge-libs) PKG_SUMMARY="MUNGE authentication library (Debian 12's libmunge2, repackaged)" ;;
    munge)
      PKG_SUMMARY="MUNGE authentication service (Debian 12's munge, repackaged)"
      PKG_RPM_REQUIRES="munge-libs = ${PKG_VERSION%-*}"
      ;;
    hwloc-libs) PKG_SUMMARY="Portable hardware locality library (Debian 12's libhwloc15, repackaged)" ;;
    compat-lua-libs) PKG_SUMMARY="Lua 5.1 library (Debian 12's liblua5.1-0, repackaged)" ;;
    slurm-libs) PKG_SUMMARY="Slurm's shared library (Debian 12's libslurmfull, repackaged)" ;;
    slurm)
      PKG_SUMMARY="Slurm commands and plugins (Debian 12's slurm-client and slurm-wlm-basic-plugins, repackaged)"
      # pmix as EPEL's slurm requires it (its mpi_pmix plugin opens it).
      PKG_RPM_REQUIRES="slurm-libs = ${PKG_VERSION%-*}, munge, hwloc-libs, compat-lua-libs, pmix"
      ;;
    slurm-slurmctld)
      PKG_SUMMARY="Slurm controller daemon (Debian 12's slurmctld, repackaged)"
      PKG_RPM_REQUIRES="slurm = ${PKG_VERSION%-*}"
      ;;
    slurm-slurmd)
      PKG_SUMMARY="Slurm node daemon (Debian 12's slurmd, repackaged)"
      PKG_RPM_REQUIRES="slurm = ${PKG_VERSION%-*}"
      ;;
    libevent) PKG_SUMMARY="libevent's core and pthreads libraries (Debian 12's, repackaged)" ;;
    pmix)
      # Debian's Slurm plugin opens pmix2/lib/libpmix.so, the link Debian
      # ships in libpmix-dev; Rocky's pmix carries the library it links.
      PKG_SUMMARY="PMIx library (Debian 12's libpmix2, and the link Slurm's plugin opens, repackaged)"
      PKG_RPM_REQUIRES="libevent, hwloc-libs, munge-libs"
      ;;
  esac
fi

lib=usr/lib/x86_64-linux-gnu
units=usr/lib/systemd/system
pkg_stage() {
  local d=$1
  case $PKG_VARIANT in
    munge-libs) el_take "$d" "$(el_deb libmunge2)" "$lib/libmunge.so.2*" ;;
    munge)
      el_take "$d" "$(el_deb munge)" usr/bin/munge usr/bin/unmunge usr/bin/remunge \
        usr/sbin/munged usr/sbin/mungekey etc/munge var/lib/munge var/log/munge
      mkdir -p "$d/$units"
      dpkg-deb --fsys-tarfile "$(el_deb munge)" | tar -xO ./lib/systemd/system/munge.service \
        >"$d/$units/munge.service"
      ;;
    hwloc-libs) el_take "$d" "$(el_deb libhwloc15)" "$lib/libhwloc.so.15*" ;;
    compat-lua-libs) el_take "$d" "$(el_deb liblua5.1-0)" "$lib/liblua5.1.so.0*" ;;
    libevent)
      el_take "$d" "$(el_deb libevent-core-2.1-7)" "$lib/libevent_core-2.1.so.7*"
      el_take "$d" "$(el_deb libevent-pthreads-2.1-7)" "$lib/libevent_pthreads-2.1.so.7*"
      ;;
    pmix)
      el_take "$d" "$(el_deb libpmix2)" "$lib/libpmix.so.2*" "$lib/pmix2"
      el_take "$d" "$(el_deb libpmix-dev)" "$lib/pmix2/lib/libpmix.so"
      ;;
    slurm-libs) el_take "$d" "$(el_deb slurm-wlm-basic-plugins)" "$lib/slurm-wlm/libslurmfull.so" ;;
    slurm)
      el_take "$d" "$(el_deb slurm-wlm-basic-plugins)" "$lib/slurm-wlm/*.so" etc/slurm
      rm -f "$d/$lib/slurm-wlm/libslurmfull.so"
      el_take "$d" "$(el_deb slurm-client)" "usr/bin/s*"
      mkdir -p "$d/var/log/slurm" "$d/var/lib/slurm"
      ;;
    slurm-slurmctld | slurm-slurmd)
      local daemon=${PKG_VARIANT#slurm-} deb
      deb=$(el_deb "$daemon")
      el_take "$d" "$deb" "usr/sbin/$daemon-wlm" "var/lib/slurm/$daemon"
      # Debian points /usr/sbin/slurmd at slurmd-wlm through update-alternatives.
      ln -s "$daemon-wlm" "$d/usr/sbin/$daemon"
      [ "$daemon" = slurmd ] && el_take "$d" "$deb" usr/sbin/slurmstepd-wlm &&
        ln -s slurmstepd-wlm "$d/usr/sbin/slurmstepd"
      mkdir -p "$d/$units"
      dpkg-deb --fsys-tarfile "$deb" | tar -xO "./lib/systemd/system/$daemon.service" \
        >"$d/$units/$daemon.service"
      ;;
  esac
  # dpkg-deb -x gives the files' owners and modes; the builder normalises them.
  return 0
}
# MUNGE and Slurm come from EPEL on Rocky 9; their base libraries from Rocky's
# own archive.
case ${PKG_VARIANT:-} in
  hwloc-libs | libevent) PKG_REPO=rocky/BaseOS ;;
  compat-lua-libs | pmix) PKG_REPO=rocky/AppStream ;;
  *) PKG_REPO=epel ;;
esac
