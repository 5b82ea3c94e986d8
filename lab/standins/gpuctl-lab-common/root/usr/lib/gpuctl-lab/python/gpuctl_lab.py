"""Shared by the gpuctl lab's stand-in tools (nvidia-smi, ibstat, ...).

A lab node has no GPU and no InfiniBand adapter. What the stand-ins report comes
from the node profile the lab writes (/etc/gpuctl-lab/profile.env) plus a little
state on the node's own filesystem, so one package behaves per node and per
injected fault. Every value is derived from the node name, never random, so a
node answers the same way on every call and after every reboot.

Environment (for tests): GPUCTL_LAB_PROFILE overrides the profile path;
GPUCTL_LAB_ROOT prefixes every other node path (default /).
"""

import fcntl
import hashlib
import os
import shlex
import stat
import time

PROFILE_PATH = "/etc/gpuctl-lab/profile.env"
NVIDIA_LIB_DIR = "/usr/lib/gpuctl-lab/nvidia"  # version files the packages ship
NVIDIA_RUN_DIR = "/run/gpuctl-lab/nvidia"  # tmpfs: what this boot loaded
FABRIC_DIR = "/srv/gpuctl-lab-ib"  # the lab's IB fabric, shared by its nodes
MODPROBE_DIRS = ("/etc/modprobe.d", "/usr/lib/modprobe.d", "/lib/modprobe.d", "/run/modprobe.d")


def node_path(path):
    """An absolute node path, under GPUCTL_LAB_ROOT when a test sets it."""
    return os.path.join(os.environ.get("GPUCTL_LAB_ROOT", "/"), path.lstrip("/"))


def read_text(path, default=None):
    try:
        with open(node_path(path), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return default


def write_text(path, text):
    full = node_path(path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def stable_int(*parts):
    """A number fixed by the parts (node name, device index...)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()
    return int(digest, 16)


def stable_hex(*parts, length=32):
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:length]


class Profile:
    """The node profile: shell KEY=VALUE lines, quotes allowed, # comments."""

    def __init__(self, values):
        self.values = values
        self.node = values.get("LAB_NODE") or os.uname().nodename
        self.address = values.get("LAB_ADDRESS", "")
        self.gpu_model = values.get("GPU_MODEL", "")
        self.gpu_count = _int(values.get("GPU_COUNT"), 0)
        self.gpu_memory_mib = _int(values.get("GPU_MEMORY_MIB"), 0)
        # An HGX/DGX baseboard whose GPUs reach each other through NVSwitch:
        # CUDA needs Fabric Manager (below).
        self.nvswitch = values.get("GPU_NVSWITCH", "").lower() in ("1", "yes", "true")
        self.faults = {}  # name -> list of values ("" for a bare fault)
        for word in values.get("FAULTS", "").split():
            name, _, value = word.partition("=")
            self.faults.setdefault(name, []).append(value)
        self.ib_ports = []
        for word in values.get("IB_PORTS", "").split():
            fields = word.split(":")
            if len(fields) != 4:
                continue
            dev, port, rate, state = fields
            if dev in self.faults.get("ib-down", []) or f"{dev}:{port}" in self.faults.get(
                    "ib-down", []):
                state = "Down"
            self.ib_ports.append(IbPort(dev, _int(port, 1), _int(rate, 0), state))

    def has_fault(self, name):
        return name in self.faults

    def fault_int(self, name, default=0):
        values = self.faults.get(name)
        return _int(values[-1], default) if values else default


class IbPort:
    def __init__(self, device, port, rate, state):
        self.device = device
        self.port = port
        self.rate = rate
        self.active = state.lower() == "active"


# --- the InfiniBand fabric ----------------------------------------------------
#
# A port whose link comes up (its node boots, or a fault plugs its cable back)
# is Initializing until a subnet manager on its fabric gives it a LID and sets
# it Active. Then, as on a real fabric, it keeps that LID while its link stays
# up, even if every subnet manager stops: only a link that trains again needs
# one. The lab's fabric is one switch per rail: the ports of one device name
# (mlx5_0 on every node) share one. FABRIC_DIR is the same directory in every
# node of a lab. A managed switch's subnet manager is the file switch-sm there
# (the lab writes it when the inventory names no subnet manager); an OpenSM
# stand-in holds an exclusive flock on <rail>/<its GUID> while it runs, so
# one that stopped, crashed or went down with its node stops answering at
# once, and touches it on every sweep, so its mtime says when it last swept
# the fabric: a port whose link came up before that sweep was brought up.

SWEEP_SECONDS = 1.0  # the stand-in's sweep interval (the real default is 10 s)


def port_guid(node, device):
    """A port's GUID (16 hex digits): Mellanox's OUI, then a per-node tail."""
    return "0c42a10300" + stable_hex(node, "ib", device, length=6)


def port_lid(node, device):
    return 1 + stable_int(node, "lid", device) % 1000


class SubnetManager:
    def __init__(self, priority, guid, lid, node, since, swept, live):
        self.priority = priority
        self.guid = guid
        self.lid = lid
        self.node = node
        self.since = since  # when it started
        self.swept = swept  # when it last swept the fabric
        self.live = live


def _sm_from(text, swept, live):
    fields = (text or "").split()
    if len(fields) < 4:
        return None
    since = float(fields[4]) if len(fields) > 4 and _is_number(fields[4]) else swept
    return SubnetManager(_int(fields[0], 0), fields[1], _int(fields[2], 0), fields[3], since,
                         swept, live)


def _is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def subnet_managers(rail):
    """Every subnet manager that ran on a rail's fabric, live or not."""
    found = []
    switch = node_path(f"{FABRIC_DIR}/switch-sm")
    if os.path.exists(switch):
        sm = _sm_from(read_text(f"{FABRIC_DIR}/switch-sm"), time.time(), True)
        if sm:
            found.append(sm)
    directory = node_path(f"{FABRIC_DIR}/{rail}")
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        names = []
    for name in names:
        try:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                live = False  # nobody holds it: that OpenSM is gone
            except BlockingIOError:
                live = True
            sm = _sm_from(os.read(fd, 512).decode(errors="replace"), os.fstat(fd).st_mtime, live)
            if sm:
                found.append(sm)
        finally:
            os.close(fd)
    return found


def live_subnet_managers(rail):
    """The subnet managers answering on a rail's fabric."""
    return [sm for sm in subnet_managers(rail) if sm.live]


def _elect(live):
    """The master of live subnet managers: the highest priority, then the
    lowest GUID (IBA 14.4.1); None for none."""
    return min(live, key=lambda sm: (-sm.priority, sm.guid)) if live else None


def master_subnet_manager(rail):
    return _elect(live_subnet_managers(rail))


def node_booted_at():
    """When this node booted (its PID 1 started), as a time.time() value."""
    try:
        with open("/proc/1/stat", encoding="ascii") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", encoding="ascii") as f:
            btime = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        return btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return 0.0


def link_up_since():
    """When this node's IB links last trained: its boot, or the last fault
    change (gpuctl-lab fault rewrites the profile; a cable pulled and plugged
    back trains again)."""
    try:
        changed = os.path.getmtime(os.environ.get("GPUCTL_LAB_PROFILE") or node_path(PROFILE_PATH))
    except OSError:
        changed = 0.0
    return max(node_booted_at(), changed)


def port_subnet_manager(port, since=None):
    """The subnet manager that gave an up port its LID, None while the port
    is Initializing: the master if one answers, else the last one to sweep
    the fabric after the link came up."""
    if not port.active:
        return None
    sms = subnet_managers(port.device)
    master = _elect([sm for sm in sms if sm.live])
    if master:
        return master
    since = link_up_since() if since is None else since
    swept = [sm for sm in sms if sm.swept >= since]
    return max(swept, key=lambda sm: sm.swept) if swept else None


def hold_subnet_manager(rail, priority, guid, lid, node):
    """What an OpenSM stand-in does while it runs: hold its entry's lock. The
    returned descriptor must stay open; closing it (or dying) lets go."""
    path = node_path(f"{FABRIC_DIR}/{rail}/{guid}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.write(fd, f"{priority} {guid} {lid} {node} {time.time():.3f}\n".encode())
    os.fsync(fd)
    return fd


def sweep_subnet_manager(fd):
    """A sweep of the fabric by the subnet manager holding fd."""
    os.utime(fd)


def _int(text, default):
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return default


def load_profile():
    path = os.environ.get("GPUCTL_LAB_PROFILE") or node_path(PROFILE_PATH)
    values = {}
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue  # an unbalanced quote: skip the line, as a forgiving reader
        for word in words:  # "export KEY=VALUE" works too
            key, sep, value = word.partition("=")
            if sep:
                values[key] = value
    return Profile(values)


# --- the NVIDIA kernel module ------------------------------------------------
#
# A real driver works only once its kernel module is loaded, which happens at
# boot, and only if nouveau did not take the GPU first. The stand-in keeps that
# rule: nvidia-dkms ships module-version; at boot a systemd unit runs
# `driver-state --load`, which records in /run (a tmpfs, so a reboot clears it)
# the version it "loaded", or why it could not. Installing or upgrading the
# driver therefore changes nothing until the next reboot, and nvidia-smi from a
# newer nvidia-utils against an older loaded module reports the real
# "Driver/library version mismatch".


def nouveau_blacklisted():
    for d in MODPROBE_DIRS:
        try:
            names = sorted(os.listdir(node_path(d)))
        except OSError:
            continue
        for name in names:
            if not name.endswith(".conf"):
                continue
            for line in (read_text(f"{d}/{name}", "") or "").splitlines():
                if line.split()[:2] == ["blacklist", "nouveau"]:
                    return True
    return False


def module_built_for_running_kernel():
    """Whether DKMS put an nvidia module under /lib/modules/$(uname -r)."""
    top = node_path(f"/lib/modules/{os.uname().release}")
    for _, _, files in os.walk(top):
        if any(f in ("nvidia.ko", "nvidia.ko.xz", "nvidia.ko.zst") for f in files):
            return True
    return False


def load_module(profile):
    """What the boot unit does: record the module this boot runs with."""
    module = (read_text(f"{NVIDIA_LIB_DIR}/module-version") or "").strip()
    if not module:
        result = "failed no nvidia kernel module installed"
    elif not nouveau_blacklisted():
        result = "failed nouveau is bound to the GPUs (no modprobe.d file blacklists nouveau)"
    elif profile.has_fault("driver-load-fail"):
        result = "failed modprobe nvidia: fault injected (driver-load-fail)"
    elif not module_built_for_running_kernel():
        # DKMS could not build it for this kernel (no headers at install
        # time): the package is there, the module is not.
        kernel = os.uname().release
        result = (f"failed modprobe: FATAL: Module nvidia not found in directory "
                  f"/lib/modules/{kernel}")
    else:
        result = f"loaded {module}"
        make_device_nodes(profile)
        # The GPUs come up reset: a MIG mode left pending takes effect now.
        import gpuctl_mig  # noqa: E402 (imports this module)
        gpuctl_mig.boot()
    write_text(f"{NVIDIA_RUN_DIR}/module", result + "\n")
    return result


def make_device_nodes(profile):
    """What nvidia-modprobe does when the module loads: /dev/nvidiactl and
    /dev/nvidia0..N-1 (character major 195), one per GPU the driver sees.
    Slurm's gres.conf names them (File=/dev/nvidia[0-7]) and slurmd waits for
    them. Nothing behind them: opening one gives ENXIO (no such device)."""
    wanted = [("nvidiactl", 255)] + [(f"nvidia{g.index}", g.index) for g in gpus(profile)]
    for name, minor in wanted:
        path = node_path(f"/dev/{name}")
        if os.path.exists(path):
            continue
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(195, minor))
            os.chmod(path, 0o666)
        except OSError:
            pass  # not root (a unit test under GPUCTL_LAB_ROOT): no device nodes


class DriverState:
    """The driver as nvidia-smi would find it."""

    def __init__(self, profile):
        self.module = (read_text(f"{NVIDIA_LIB_DIR}/module-version") or "").strip() or None
        self.library = (read_text(f"{NVIDIA_LIB_DIR}/nvml-version") or "").strip() or None
        record = (read_text(f"{NVIDIA_RUN_DIR}/module") or "").strip()
        self.loaded = None
        if record.startswith("loaded "):
            self.loaded = record.split(" ", 1)[1]
            self.reason = ""
        elif record.startswith("failed "):
            self.reason = record.split(" ", 1)[1]
        elif self.module:
            self.reason = "installed since the last boot: reboot to load the module"
        else:
            self.reason = "no nvidia kernel module installed"
        if self.loaded and profile.has_fault("driver-load-fail"):
            self.loaded = None
            self.reason = "fault injected (driver-load-fail)"
        self.reboot_required = self.module != self.loaded and self.module is not None

    @property
    def state(self):
        if not self.loaded:
            return "not-loaded"
        if self.library and self.library != self.loaded:
            return "mismatch"
        return "loaded"


# --- GPUs ---------------------------------------------------------------------
# Per model: the values a real board of that model reports. The H100 row is
# taken from the real capture in tests/fixtures/nvidia-smi/h100-80gb-hbm3/.

_H100 = dict(name="NVIDIA H100 80GB HBM3", arch="Hopper", memory_mib=81559, reserved_mib=480,
             compute_cap="9.0", vbios="96.00.DA.00.0C", device_id="0x233010DE",
             subsystem_id="0x16C110DE", board_part="692-2G520-0200-000",
             gpu_part="2330-885-A1", inforom="G520.0200.00.05", power_limit=700,
             idle_power=70.7, pcie_gen=5, nvlinks=18, bar1_mib=131072,
             clocks=(1980, 2619, 1545), aliases=("h100", "h100-sxm", "h100-80gb-hbm3"))
MODELS = [
    _H100,
    dict(_H100, name="NVIDIA H200", memory_mib=143771, reserved_mib=586,
         vbios="96.00.9F.00.01", device_id="0x233510DE", subsystem_id="0x18BE10DE",
         board_part="692-2G520-0280-000", gpu_part="2335-885-A1", clocks=(1980, 3201, 1545),
         bar1_mib=262144, aliases=("h200", "h200-141gb")),
    dict(_H100, name="NVIDIA A100-SXM4-80GB", arch="Ampere", memory_mib=81920, reserved_mib=567,
         compute_cap="8.0", vbios="92.00.45.00.03", device_id="0x20B210DE",
         subsystem_id="0x147F10DE", board_part="692-2G506-0210-002", gpu_part="20B2-895-A1",
         inforom="G506.0210.00.02", power_limit=400, idle_power=61.5, pcie_gen=4, nvlinks=12,
         clocks=(1410, 1593, 1290), aliases=("a100", "a100-80gb", "a100-sxm4-80gb")),
    dict(_H100, name="NVIDIA A100-SXM4-40GB", arch="Ampere", memory_mib=40960, reserved_mib=512,
         compute_cap="8.0", vbios="92.00.19.00.10", device_id="0x20B010DE",
         subsystem_id="0x134F10DE", board_part="692-2G506-0200-003", gpu_part="20B0-884-A1",
         inforom="G506.0200.00.04", power_limit=400, idle_power=55.2, pcie_gen=4, nvlinks=12,
         clocks=(1410, 1215, 1290), aliases=("a100-40gb", "a100-sxm4-40gb")),
    dict(_H100, name="NVIDIA L40S", arch="Ada Lovelace", memory_mib=46068, reserved_mib=559,
         compute_cap="8.9", vbios="95.02.66.00.02", device_id="0x26B910DE",
         subsystem_id="0x185110DE", board_part="900-2G133-0080-000", gpu_part="26B9-896-A1",
         inforom="G133.0080.00.02", power_limit=350, idle_power=33.4, pcie_gen=4, nvlinks=0,
         bar1_mib=65536, clocks=(2520, 9001, 1965), aliases=("l40s",)),
    dict(_H100, name="NVIDIA B200", arch="Blackwell", memory_mib=183359, reserved_mib=1029,
         compute_cap="10.0", vbios="97.00.82.00.0E", device_id="0x290110DE",
         subsystem_id="0x199910DE", board_part="692-2G525-0220-000", gpu_part="2901-886-A1",
         inforom="G525.0220.00.04", power_limit=1000, idle_power=140.3, pcie_gen=6,
         bar1_mib=262144, clocks=(1965, 3996, 1965), aliases=("b200",)),
]

# Bus ids of the eight GPUs of a DGX H100, in nvidia-smi's order; more GPUs
# continue on made-up buses.
_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


def find_model(text):
    key = text.strip().lower()
    for m in MODELS:
        if key in (m["name"].lower(), m["name"].lower().removeprefix("nvidia ")) or \
                key in m["aliases"]:
            return m
    if not key:
        return _H100
    # An unknown model still works: the H100's figures under the given name.
    name = text.strip() if text.strip().upper().startswith("NVIDIA") else f"NVIDIA {text.strip()}"
    return dict(_H100, name=name, aliases=())


class Gpu:
    def __init__(self, profile, model, index):
        self.physical_index = index  # position on the board; names stay fixed
        self.index = index  # what nvidia-smi numbers it (visible GPUs only)
        self.model = model
        node = profile.node
        h = stable_hex(node, "gpu", index, length=32)
        self.uuid = f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
        self.serial = str(1650000000000 + stable_int(node, "serial", index) % 10000000000)
        bus = _BUSES[index] if index < len(_BUSES) else 0xE0 + index
        self.bus_id = f"00000000:{bus:02X}:00.0"
        self.bus = bus
        self.memory_mib = profile.gpu_memory_mib or model["memory_mib"]
        self.reserved_mib = model["reserved_mib"]
        self.memory_used_mib = 0
        self.temperature = 30 + stable_int(node, "temp", index) % 8
        self.power = model["idle_power"] + (stable_int(node, "power", index) % 200) / 100.0
        self.pdi = "0x" + stable_hex(node, "pdi", index, length=16)

    @property
    def memory_free_mib(self):
        return self.memory_mib - self.reserved_mib - self.memory_used_mib


def gpus(profile):
    """The GPUs the driver sees: gpu-missing=N hides the last N (a board that
    fell off the bus); the rest are numbered from 0 as nvidia-smi does."""
    model = find_model(profile.gpu_model)
    count = max(0, profile.gpu_count - profile.fault_int("gpu-missing"))
    result = [Gpu(profile, model, i) for i in range(count)]
    for visible, g in enumerate(result):
        g.index = visible
    return result


def cuda_version_of_driver(version):
    """The CUDA version each driver branch supports (nvidia-smi's header)."""
    branch = version.split(".")[0]
    return {"535": "12.2", "550": "12.4", "560": "12.6", "570": "12.8",
            "575": "12.9", "580": "13.0"}.get(branch, "13.0")


# --- NVSwitch and Fabric Manager ----------------------------------------------
#
# On an NVSwitch board nothing crosses the switches until Fabric Manager (FM)
# has programmed them, and the driver refuses CUDA work until then: cuInit
# answers 802 (CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized")
# while NVML, so nvidia-smi, sees every GPU. FM starts only against a loaded
# driver of exactly its own version. The stand-in daemon (nvidia-fabricmanager)
# records "<pid> <version>" here while it runs; the CUDA-level stand-ins ask
# fabric_manager() whether that process is alive.
FABRIC_RECORD = f"{NVIDIA_RUN_DIR}/fabricmanager"
FM_VERSION_FILE = f"{NVIDIA_LIB_DIR}/fabricmanager-version"  # what the package installed

CUDA_ERRORS = {
    0: ("CUDA_SUCCESS", "no error"),
    100: ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
    802: ("CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"),
    803: ("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
          "system has unsupported display driver / cuda driver combination"),
    999: ("CUDA_ERROR_UNKNOWN", "unknown error"),
}


def fabric_manager():
    """The version of the Fabric Manager running now, or None."""
    fields = (read_text(FABRIC_RECORD) or "").split()
    if len(fields) != 2 or not fields[0].isdigit():
        return None
    if not os.path.exists(f"/proc/{fields[0]}"):
        return None  # killed without cleaning up: not running
    return fields[1]


def fabric_ready(profile, driver):
    """True when CUDA may run across the board: no NVSwitch, or a Fabric
    Manager of the loaded driver's version runs."""
    return not profile.nvswitch or (driver.loaded is not None and
                                    fabric_manager() == driver.loaded)


def fabric_state(profile, model):
    """nvidia-smi -q's Fabric State and Status for a GPU of `model`: only
    Hopper and later report it, and only on an NVSwitch board."""
    if not profile.nvswitch or model["arch"] not in ("Hopper", "Blackwell"):
        return "N/A", "N/A"
    if fabric_ready(profile, DriverState(profile)):
        return "Completed", "Success"
    return "Not Started", "N/A"


def cuda_init(profile):
    """What cuInit(0) returns on this node: 0, or a CUresult of CUDA_ERRORS."""
    driver = DriverState(profile)
    if driver.state == "mismatch":
        return 803
    if driver.state != "loaded" or not gpus(profile):
        return 100
    if not fabric_ready(profile, driver):
        return 802
    return 0
