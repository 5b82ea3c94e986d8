"""Multi-Instance GPU (MIG) for the lab's nvidia-smi stand-in (docs/standins.md).

What the real driver keeps, kept the same way:
- A GPU's MIG mode lives in its InfoROM: it survives reboots. A change the
  driver cannot make while a client holds the GPU (nvidia-persistenced, Fabric
  Manager, DCGM) stays *pending* until the GPU is reset; the lab resets GPUs
  only at boot, when the module loads (load_module calls boot()).
- GPU instances (GIs) and their compute instances (CIs) live in the driver:
  every reboot loses them. They are kept under /run, a tmpfs.

A GI takes memory slices [start, start+size) of the GPU's eight and a number
of its seven compute slices; each profile may start only at certain slices.

Each GI and CI is also a capability, as the driver publishes it: a file
/proc/driver/nvidia/capabilities/gpuN/mig/giG[/ciC]/access holding the minor
of its /dev/nvidia-caps/nvidia-capM node, which Slurm's gres.conf names. The
lab mounts a tmpfs of the node's own on /proc/driver so these can be written.
"""

import json
import os
import shutil
import stat

import gpuctl_lab as lab

MODE_FILE = "/var/lib/gpuctl-lab/nvidia/mig-mode"  # "UUID CURRENT PENDING" lines (InfoROM)
INSTANCE_FILE = f"{lab.NVIDIA_RUN_DIR}/mig-instances.json"  # {uuid: [gi, ...]}: lost at boot

COMPUTE_SLICES = 7
MEMORY_SLICES = 8

# The GI profiles of a seven-slice GPU: (size class, profile id, compute
# slices, memory slices, most instances, starting memory slices). The size
# class picks the name: "1g" + the model's memory for one, two, four or
# eight memory slices (1g.10gb, 1g.20gb, 3g.40gb on an 80 GB board).
SHAPE = (
    ("1g", 19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
    ("1g+me", 20, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
    ("1g", 15, 1, 2, 4, (0, 2, 4, 6)),
    ("2g", 14, 2, 2, 3, (0, 2, 4)),
    ("3g", 9, 3, 4, 2, (0, 4)),
    ("4g", 5, 4, 4, 1, (0,)),
    ("7g", 0, 7, 8, 1, (0,)),
)

# Memory per 1, 2, 4 and 8 slices, as the profile names print it, per model.
MEMORY_NAMES = {
    "NVIDIA A100-SXM4-40GB": ("5gb", "10gb", "20gb", "40gb"),
    "NVIDIA A100-SXM4-80GB": ("10gb", "20gb", "40gb", "80gb"),
    "NVIDIA H100 80GB HBM3": ("10gb", "20gb", "40gb", "80gb"),
    "NVIDIA H200": ("18gb", "35gb", "71gb", "141gb"),
    "NVIDIA B200": ("23gb", "45gb", "90gb", "180gb"),
}


class Profile:
    def __init__(self, name, pid, compute, memory, most, starts):
        self.name, self.id, self.compute, self.memory = name, pid, compute, memory
        self.most, self.starts = most, starts


def profiles(model):
    """The GI profiles of `model` (a gpuctl_lab model dict); [] without MIG."""
    names = MEMORY_NAMES.get(model["name"])
    if not names:
        return []
    by_slices = {1: names[0], 2: names[1], 4: names[2], 8: names[3]}
    out = []
    for size, pid, compute, memory, most, starts in SHAPE:
        base, _, extra = size.partition("+")
        name = f"{base}.{by_slices[memory]}" + (f"+{extra}" if extra else "")
        out.append(Profile(name, pid, compute, memory, most, starts))
    return out


# --- mode (InfoROM) -------------------------------------------------------------

def _modes():
    modes = {}
    for line in (lab.read_text(MODE_FILE) or "").splitlines():
        f = line.split()
        if len(f) == 3:
            modes[f[0]] = (f[1], f[2])
    return modes


def mode(gpu):
    """(current, pending): "Enabled" or "Disabled"."""
    return _modes().get(gpu.uuid, ("Disabled", "Disabled"))


def _save_modes(modes):
    lab.write_text(MODE_FILE, "".join(f"{u} {c} {p}\n" for u, (c, p) in sorted(modes.items())))


def gpu_clients(profile):
    """What holds the GPUs open, so a mode change must wait for a reset."""
    held = []
    if (lab.read_text(f"{lab.NVIDIA_RUN_DIR}/persistence") or "").strip():
        held.append("nvidia-persistenced")
    if lab.fabric_manager():
        held.append("nvidia-fabricmanager")
    return held


def set_mode(profile, gpu, enabled):
    """`nvidia-smi -i N -mig 0|1`: (text, exit status) for one GPU."""
    if not profiles(gpu.model):
        return (f"Unable to {'enable' if enabled else 'disable'} MIG Mode for GPU "
                f"{gpu.bus_id}: Not Supported\n"), 3
    want = "Enabled" if enabled else "Disabled"
    modes = _modes()
    current, _ = modes.get(gpu.uuid, ("Disabled", "Disabled"))
    if current == want:
        modes[gpu.uuid] = (current, want)
        _save_modes(modes)
        return f"{want} MIG Mode for GPU {gpu.bus_id}\n", 0
    if not enabled and instances(gpu):
        return (f"Unable to disable MIG Mode for GPU {gpu.bus_id}: In use by another client\n"), 19
    clients = gpu_clients(profile)
    if clients:
        modes[gpu.uuid] = (current, want)
        _save_modes(modes)
        return (f"Warning: MIG mode is in pending {'enable' if enabled else 'disable'} state for "
                f"GPU {gpu.bus_id}:In use by another client\n"
                f"{gpu.bus_id} is currently being used by one or more other processes (e.g. CUDA "
                "application or a monitoring application such as another instance of nvidia-smi)."
                " Please first kill all processes using the device and retry the command or "
                "reboot the system to make MIG mode effective.\n"), 0
    modes[gpu.uuid] = (want, want)
    _save_modes(modes)
    return f"{want} MIG Mode for GPU {gpu.bus_id}\n", 0


def boot():
    """At boot the GPUs reset: a pending mode becomes current."""
    reset_capabilities()
    modes = _modes()
    if modes:
        _save_modes({u: (p, p) for u, (_, p) in modes.items()})


# --- instances (driver, /run) -----------------------------------------------------

def _all_instances():
    try:
        return json.loads(lab.read_text(INSTANCE_FILE) or "{}")
    except ValueError:
        return {}


def instances(gpu):
    """The GPU's GIs: [{"id", "profile", "start", "size", "cis": [ids]}] by id."""
    return sorted(_all_instances().get(gpu.uuid, []), key=lambda gi: gi["id"])


def _save_instances(gpu, gis):
    everything = _all_instances()
    everything[gpu.uuid] = gis
    lab.write_text(INSTANCE_FILE, json.dumps(everything, sort_keys=True))
    _publish_capabilities(gpu, gis)


# --- capabilities (/proc/driver/nvidia/capabilities, /dev/nvidia-caps) -----------

CAPS_PROC = "/proc/driver/nvidia/capabilities"
CAPS_DEV = "/dev/nvidia-caps"
# The nvidia-caps character major is dynamic on a real host (/proc/devices
# names it); the lab takes one no driver of this kernel registers, so opening
# a node gives ENXIO, like /dev/nvidiaN's.
CAPS_MAJOR = 511
# The driver's table (/proc/driver/nvidia-caps/mig-minors): config 1, monitor
# 2, then per GPU 15 GI slots of one access minor and eight CI minors each.
# It gives gpu0/gi2/access 21 and gpu0/gi2/ci0/access 22, as published
# captures show.
GI_SLOTS, CI_SLOTS = 15, 8


def cap_minor(gpu_index, gi, ci=None):
    base = 3 + gpu_index * GI_SLOTS * (1 + CI_SLOTS) + gi * (1 + CI_SLOTS)
    return base if ci is None else base + 1 + ci


def _write_cap(relative, minor):
    lab.write_text(f"{CAPS_PROC}/{relative}",
                   f"DeviceFileMinor: {minor}\nDeviceFileMode: 292\nDeviceFileModify: 1\n")
    path = lab.node_path(f"{CAPS_DEV}/nvidia-cap{minor}")
    if os.path.exists(path):
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.mknod(path, 0o444 | stat.S_IFCHR, os.makedev(CAPS_MAJOR, minor))
        os.chmod(path, 0o444)
    except OSError:
        pass  # not root (a unit test under GPUCTL_LAB_ROOT): the /proc files alone


def reset_capabilities():
    """The module loads: only the driver-wide MIG capabilities exist."""
    shutil.rmtree(lab.node_path(CAPS_PROC), ignore_errors=True)
    _write_cap("mig/config", 1)
    _write_cap("mig/monitor", 2)


def _publish_capabilities(gpu, gis):
    """gpuN/mig/ as the GPU's GIs and CIs now are."""
    root = f"gpu{gpu.index}/mig"
    shutil.rmtree(lab.node_path(f"{CAPS_PROC}/{root}"), ignore_errors=True)
    for gi in gis:
        _write_cap(f"{root}/gi{gi['id']}/access", cap_minor(gpu.index, gi["id"]))
        for ci in gi["cis"]:
            _write_cap(f"{root}/gi{gi['id']}/ci{ci}/access", cap_minor(gpu.index, gi["id"], ci))


def ci_profile_id(gi):
    """The id of the compute instance profile that spans the whole GI (-C's)."""
    return {1: 0, 2: 1, 3: 2, 4: 3, 7: 4}[gi["compute"]]


def find_profile(gpu, word):
    for p in profiles(gpu.model):
        if word in (str(p.id), p.name, f"MIG {p.name}"):
            return p
    return None


def _free_start(gis, p, want=None):
    used = set()
    for gi in gis:
        used.update(range(gi["start"], gi["start"] + gi["size"]))
    for start in p.starts if want is None else (want,):
        if start in p.starts and not used & set(range(start, start + p.memory)):
            return start
    return None


def create_gi(gpu, word):
    """-cgi for one profile tuple (NAME|ID[:START]): (GI dict or None, error)."""
    name, _, start = word.partition(":")
    p = find_profile(gpu, name)
    if p is None or (start and not start.isdigit()):
        return None, "Invalid Argument"
    gis = instances(gpu)
    compute = sum(g["compute"] for g in gis)
    same = sum(1 for g in gis if g["profile"] == p.name)
    where = _free_start(gis, p, int(start) if start else None)
    if where is None or same >= p.most or compute + p.compute > COMPUTE_SLICES:
        return None, "Insufficient Resources"
    ids = {g["id"] for g in gis}
    gid = next(i for i in range(1, 64) if i not in ids)
    gi = {"id": gid, "profile": p.name, "pid": p.id, "start": where, "size": p.memory,
          "compute": p.compute, "cis": []}
    gis.append(gi)
    _save_instances(gpu, gis)
    return gi, ""


def create_ci(gpu, gid):
    gis = instances(gpu)
    for gi in gis:
        if gi["id"] == gid:
            gi["cis"].append(len(gi["cis"]))
            _save_instances(gpu, gis)
            return gi["cis"][-1]
    return None


def destroy_cis(gpu):
    gis = instances(gpu)
    gone = [(gi["id"], ci) for gi in gis for ci in gi["cis"]]
    for gi in gis:
        gi["cis"] = []
    _save_instances(gpu, gis)
    return gone


def destroy_gis(gpu):
    """The GIs without compute instances go; (gone ids, ids still in use)."""
    gis = instances(gpu)
    gone = [gi["id"] for gi in gis if not gi["cis"]]
    _save_instances(gpu, [gi for gi in gis if gi["cis"]])
    return gone, [gi["id"] for gi in gis if gi["cis"]]


def devices(gpu):
    """The MIG devices (one per CI), in -L's order: [(profile name, uuid)]."""
    out = []
    for gi in instances(gpu):
        for ci in gi["cis"]:
            h = lab.stable_hex(gpu.uuid, "mig", gi["id"], ci, length=32)
            out.append((gi["profile"], f"MIG-{h[0:8]}-{h[8:12]}-5{h[13:16]}-{h[16:20]}-{h[20:32]}"))
    return out


def device_count(profile):
    """MIG devices on the node, 0 when no GPU runs MIG."""
    return sum(len(devices(g)) for g in lab.gpus(profile) if mode(g)[0] == "Enabled")

