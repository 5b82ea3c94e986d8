#!/usr/bin/python3
"""modprobe and lsmod for a lab node, whose kernel (the host's, shared) has no
loadable modules at all (docs/standins.md, "Kernel modules").

The lab simulates the modules gpuctl loads that this kernel cannot have:
nvidia-peermem (GPUDirect RDMA). The loaded ones are listed in
/run/gpuctl-lab/modules (a tmpfs: a reboot empties it) in /proc/modules'
format, which lsmod prints as the real one prints /proc/modules. Loading one
checks what the real kernel would:

- the module file under /lib/modules/$(uname -r) (what DKMS installed);
- nvidia-peermem needs the nvidia module loaded (the driver stand-in's boot
  record) and OFED's ib_core (openibd started), else "Unknown symbol";
- built without MLNX OFED's peer-memory symbols (the driver's DKMS build
  ran before OFED was installed), its init fails: "Invalid argument".

Any other module is taken as built into the kernel: modprobe accepts it and
lists nothing, as the real one does for a built-in module.

Called as modprobe, lsmod, or `kmod --load-boot` (the boot unit, doing what
systemd-modules-load does with modules-load.d for the simulated modules).
GPUCTL_LAB_ROOT (tests) prefixes every path, as for the stand-ins.
"""

import os
import sys

LOADED = "/run/gpuctl-lab/modules"
SIMULATED = {"nvidia_peermem"}
NVIDIA_RECORD = "/run/gpuctl-lab/nvidia/module"
OPENIBD_RECORD = "/run/gpuctl-lab/openibd"
LOAD_DIRS = ("/etc/modules-load.d", "/run/modules-load.d", "/usr/local/lib/modules-load.d",
             "/usr/lib/modules-load.d", "/lib/modules-load.d")
SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")


def node(path):
    return os.path.join(os.environ.get("GPUCTL_LAB_ROOT", "/"), path.lstrip("/"))


def read(path, default=""):
    try:
        with open(node(path), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return default


def loaded():
    return [line.split()[0] for line in read(LOADED).splitlines() if line.split()]


def find_module(name, kernel):
    for top, _, files in os.walk(node(f"/lib/modules/{kernel}")):
        for f in files:
            for suffix in SUFFIXES:
                if f.endswith(suffix) and f[:-len(suffix)].replace("-", "_") == name:
                    return os.path.join(top, f)
    return None


def insert_error(name, why):
    sys.stderr.write(f"modprobe: ERROR: could not insert '{name}': {why}\n")
    return 1


def modprobe(args):
    remove = "-r" in args or "--remove" in args
    names = [a for a in args if not a.startswith("-")]
    if not names:
        sys.stderr.write("modprobe: ERROR: missing parameters. See -h.\n")
        return 1
    status = 0
    for given in names if remove else names[:1]:
        name = given.replace("-", "_")
        if remove:
            kept = [line for line in read(LOADED).splitlines() if line.split()[:1] != [name]]
            write_loaded(kept)
            continue
        if name in loaded() or name not in SIMULATED:
            continue
        kernel = os.uname().release
        path = find_module(name, kernel)
        if path is None:
            sys.stderr.write(f"modprobe: FATAL: Module {given} not found in directory "
                             f"/lib/modules/{kernel}\n")
            return 1
        if not read(NVIDIA_RECORD).startswith("loaded ") or not os.path.exists(node(OPENIBD_RECORD)):
            return insert_error(name, "Unknown symbol in module, or unknown parameter (see dmesg)")
        with open(path, encoding="utf-8", errors="replace") as f:
            built = f.read()
        if "peer memory: MLNX_OFED" not in built:
            status = insert_error(name, "Invalid argument")
            continue
        write_loaded(read(LOADED).splitlines() +
                     [f"{name} 16384 0 - Live 0x0000000000000000 (OE)"])
    return status


def write_loaded(lines):
    os.makedirs(os.path.dirname(node(LOADED)), exist_ok=True)
    with open(node(LOADED), "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def lsmod():
    out = "Module                  Size  Used by\n"
    for line in read(LOADED).splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        users = fields[3].rstrip(",")
        out += f"{fields[0]:<19} {fields[1]:>8}  {fields[2]}"
        out += f" {users}\n" if users != "-" else "\n"
    sys.stdout.write(out)
    return 0


def load_boot():
    """The modules modules-load.d lists, in file-name order across the
    directories (a name in an earlier directory hides a later one)."""
    chosen = {}
    for d in LOAD_DIRS:
        try:
            names = sorted(os.listdir(node(d)))
        except OSError:
            continue
        for f in names:
            if f.endswith(".conf") and f not in chosen:
                chosen[f] = os.path.join(d, f)
    for f in sorted(chosen):
        for line in read(chosen[f]).splitlines():
            line = line.strip()
            if line and not line.startswith(("#", ";")):
                if modprobe([line]) != 0:
                    sys.stderr.write(f"Failed to insert module '{line}'\n")
    return 0


def main(argv):
    tool = os.path.basename(argv[0])
    if tool == "lsmod":
        return lsmod()
    if tool == "modprobe":
        return modprobe(argv[1:])
    if argv[1:] == ["--load-boot"]:
        return load_boot()
    sys.stderr.write("kmod (gpuctl lab): call me as modprobe or lsmod, or with --load-boot\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
