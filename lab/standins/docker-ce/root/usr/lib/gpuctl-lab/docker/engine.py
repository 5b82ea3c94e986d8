"""Containers and images of the lab's dockerd stand-in (docs/standins.md).

The lab has no registry and no image filesystems, so a "pull" records the
reference and a container's process runs from the node's own root. What the
Engine decides is real: a `--gpus` request needs a device driver, which
dockerd registers at start only when `nvidia-container-runtime-hook` is on
its PATH (so a toolkit installed after dockerd started needs a restart); the
hook runs before the process and fails the start with nvidia-container-cli's
words where the driver does not answer; and the driver's tools
(`nvidia-smi`) exist in a container only when the hook ran, as the real hook
mounts them from the host.
"""

import hashlib
import json
import os
import re
import secrets
import shutil
import struct
import subprocess
import threading

HOOK = "nvidia-container-runtime-hook"
# The capabilities moby's nvidia device driver answers for.
NVIDIA_CAPS = {"gpu", "nvidia", "compute", "compat32", "graphics", "utility", "video", "display"}
# What the hook mounts from the host's driver into a container.
DRIVER_TOOLS = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced"}
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
RUNC_FAILED = ("failed to create task for container: failed to create shim task: "
               "OCI runtime create failed: runc create failed: unable to start container "
               "process: error during container init: ")


class ApiError(Exception):
    """An Engine API error: the HTTP status and the message the CLI prints."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def normalize(ref):
    """A reference as the daemon keeps it: the registry (docker.io, and
    library/ for its official images) and a tag added where there are none."""
    first = ref.split("/", 1)[0]
    if "/" not in ref or ("." not in first and ":" not in first and first != "localhost"):
        ref = "docker.io/" + ref
    if ref.startswith("docker.io/") and "/" not in ref[len("docker.io/"):]:
        ref = "docker.io/library/" + ref[len("docker.io/"):]
    name = ref.split("@", 1)[0]
    if "@" not in ref and ":" not in name.rsplit("/", 1)[-1]:
        ref += ":latest"
    return ref


def familiar(ref):
    """The name the CLI shows: ubuntu:latest for docker.io/library/ubuntu:latest."""
    for prefix in ("docker.io/library/", "docker.io/"):
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return ref


def image_env(ref):
    """The environment the image would carry: NVIDIA's CUDA images ask every
    container for all GPUs (NVIDIA_VISIBLE_DEVICES=all), which the nvidia
    runtime honours without `--gpus`."""
    if re.search(r"(^|/)nvidia/cuda:", ref):
        return {"PATH": "/usr/local/nvidia/bin:/usr/local/cuda/bin:" + BASE_PATH,
                "NVIDIA_VISIBLE_DEVICES": "all",
                "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
    return {"PATH": BASE_PATH}


def go_caps(caps):
    """[][]string as Go's %v prints it: [[gpu]]."""
    return "[" + " ".join("[" + " ".join(c) + "]" for c in caps or []) + "]"


class Container:
    def __init__(self, cid, name, config):
        self.id = cid
        self.name = name
        self.config = config
        self.host = config.get("HostConfig") or {}
        self.runtime = ""        # the runtime's name, resolved at create
        self.state = "created"
        self.exit_code = 0
        self.error = ""
        self.exits = 0           # how many times it exited
        self.removed = False
        self.proc = None
        self.output = []         # (stream, bytes): what `docker logs` shows
        self.attached = []       # lists an attach stream reads from
        self.cond = threading.Condition()

    def emit(self, stream, data):
        with self.cond:
            self.output.append((stream, data))
            for sink in self.attached:
                sink.append((stream, data))
            self.cond.notify_all()

    def finish(self, code, error=""):
        with self.cond:
            self.state = "exited"
            self.exit_code = code
            self.error = error
            self.exits += 1
            self.cond.notify_all()


def frame(stream, data):
    """One frame of the multiplexed stream (no TTY): stream, 3 zero bytes,
    the length as a big-endian uint32, the bytes."""
    return struct.pack(">BxxxL", stream, len(data)) + data


class Engine:
    def __init__(self, config):
        self.config = config
        root = config.get("data-root", "/var/lib/docker")
        self.images_file = os.path.join(root, "image", "gpuctl-lab-images.json")
        try:
            with open(self.images_file, encoding="utf-8") as f:
                self.images = set(json.load(f))
        except (OSError, ValueError):
            self.images = set()
        # moby registers its nvidia device driver once, at start, when the
        # hook is on PATH.
        self.hook = shutil.which(HOOK)
        self.containers = {}
        self.lock = threading.Lock()

    def runtimes(self):
        names = {"runc": "runc", "io.containerd.runc.v2": "runc"}
        for name, spec in self.config.get("runtimes", {}).items():
            names[name] = spec.get("path", "")
        return names

    def counts(self):
        with self.lock:
            live = list(self.containers.values())
        running = sum(1 for c in live if c.state == "running")
        return len(live), running, len(live) - running, len(self.images)

    def find(self, ident):
        with self.lock:
            for c in self.containers.values():
                if ident in (c.id, c.name) or (len(ident) >= 12 and c.id.startswith(ident)):
                    return c
        raise ApiError(404, f"No such container: {ident}")

    # --- images -------------------------------------------------------------

    def pull(self, from_image, tag):
        ref = normalize(f"{from_image}:{tag}" if tag else from_image)
        repo, _, tag = ref.rpartition(":")
        path = repo.split("/", 1)[1]
        digest = hashlib.sha256(ref.encode()).hexdigest()
        with self.lock:  # one writer of the image list at a time
            fresh = ref not in self.images
            self.images.add(ref)
            os.makedirs(os.path.dirname(self.images_file), exist_ok=True)
            tmp = self.images_file + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(sorted(self.images), f)
            os.replace(tmp, self.images_file)
        status = "Downloaded newer image for " if fresh else "Image is up to date for "
        return [{"status": f"Pulling from {path}", "id": tag},
                {"status": f"Digest: sha256:{digest}"},
                {"status": f"Status: {status}{familiar(ref)}"}]

    # --- containers ---------------------------------------------------------

    def create(self, body, name):
        ref = body.get("Image") or ""
        if normalize(ref) not in self.images:
            raise ApiError(404, f"No such image: {familiar(normalize(ref))}")
        if not body.get("Cmd") and not body.get("Entrypoint"):
            raise ApiError(400, "No command specified")
        host = body.get("HostConfig") or {}
        runtime = host.get("Runtime") or self.config.get("default-runtime", "runc")
        if runtime not in self.runtimes():
            raise ApiError(400, f"unknown or invalid runtime name: {runtime}")
        cid = secrets.token_hex(32)
        name = name or f"gpuctl_lab_{cid[:6]}"
        c = Container(cid, name, body)
        c.runtime = runtime
        with self.lock:
            if any(o.name == name for o in self.containers.values()):
                raise ApiError(409, f'Conflict. The container name "/{name}" is already in use')
            self.containers[cid] = c
        return {"Id": cid, "Warnings": []}

    def gpus(self, c, env):
        """Which GPUs the hook hands the container: None (no hook), "all", or a
        count or list of indexes. Raises the device driver's error."""
        requests = c.host.get("DeviceRequests") or []
        for req in requests:
            caps = req.get("Capabilities") or []
            fits = any(set(cs) <= NVIDIA_CAPS for cs in caps if cs)
            if req.get("Driver") not in ("", None, "nvidia") or not fits or not self.hook:
                raise ApiError(400, 'could not select device driver "%s" with capabilities: %s'
                               % (req.get("Driver") or "", go_caps(caps)))
            if req.get("DeviceIDs"):
                return [int(i) for i in req["DeviceIDs"] if str(i).isdigit()]
            return "all" if req.get("Count", 0) == -1 else int(req.get("Count", 0))
        wanted = env.get("NVIDIA_VISIBLE_DEVICES", "")
        if os.path.basename(self.runtimes().get(c.runtime, "")) == "nvidia-container-runtime" \
                and wanted not in ("", "void", "none"):
            return "all"
        return None

    def start(self, ident):
        c = self.find(ident)
        if c.state == "running":
            return
        env = image_env(c.config.get("Image", ""))
        for pair in c.config.get("Env") or []:
            key, _, value = pair.partition("=")
            env[key] = value
        try:
            gpus = self.gpus(c, env)
            argv = (c.config.get("Entrypoint") or []) + (c.config.get("Cmd") or [])
            exe = self.resolve(argv[0], env, gpus is not None)
            if gpus is not None:
                hook = subprocess.run([self.hook or HOOK, "prestart"], capture_output=True,
                                      text=True, stdin=subprocess.DEVNULL, check=False)
                if hook.returncode != 0:
                    raise ApiError(500, RUNC_FAILED + "error running hook #0: error running "
                                   f"hook: exit status {hook.returncode}, stdout: "
                                   f"{hook.stdout.strip()}, stderr: {hook.stderr.strip()}: "
                                   "unknown")
            proc = subprocess.Popen([exe] + argv[1:], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=env, cwd="/")
        except ApiError as err:
            c.finish(127 if "not found" in err.message else 128, err.message)
            self.exited(c)
            raise
        with c.cond:
            c.state = "running"
            c.proc = proc
        threading.Thread(target=self.run, args=(c, proc, gpus, argv), daemon=True).start()

    @staticmethod
    def resolve(cmd, env, hooked):
        """The executable in the container: the driver's tools only where the
        hook mounted them, anything else from the node's root on the
        container's PATH."""
        base = os.path.basename(cmd)
        path = env.get("PATH", BASE_PATH)
        found = None
        if base in DRIVER_TOOLS:
            found = shutil.which(base) if hooked else None
        elif "/" in cmd:
            found = cmd if os.access(cmd, os.X_OK) else None
        else:
            found = shutil.which(cmd, path=path)
        if not found:
            raise ApiError(400, RUNC_FAILED +
                           f'exec: "{cmd}": executable file not found in $PATH: unknown')
        return found

    def run(self, c, proc, gpus, argv):
        def pump(pipe, stream, keep):
            for chunk in iter(lambda: os.read(pipe.fileno(), 65536), b""):
                if keep is None:
                    c.emit(stream, chunk)
                else:
                    keep.append(chunk)
        # `nvidia-smi -L` in a container lists the GPUs it was given, from 0.
        limit = isinstance(gpus, (int, list)) and os.path.basename(argv[0]) == "nvidia-smi" \
            and "-L" in argv
        kept = [] if limit else None
        err = threading.Thread(target=pump, args=(proc.stderr, 2, None))
        err.start()
        pump(proc.stdout, 1, kept)
        err.join()
        code = proc.wait()
        if limit:
            lines = [ln for ln in b"".join(kept).decode().splitlines(True)
                     if ln.startswith("GPU ")]
            chosen = lines[:gpus] if isinstance(gpus, int) else \
                [lines[i] for i in gpus if i < len(lines)]
            c.emit(1, "".join(re.sub(r"^GPU \d+:", f"GPU {i}:", ln)
                              for i, ln in enumerate(chosen)).encode())
        c.finish(code)
        self.exited(c)

    def exited(self, c):
        if c.host.get("AutoRemove"):
            self.drop(c)

    def drop(self, c):
        with self.lock:
            self.containers.pop(c.id, None)
        with c.cond:
            c.removed = True
            c.cond.notify_all()

    def wait(self, ident, condition):
        c = self.find(ident)
        with c.cond:
            seen = c.exits
            if condition == "removed":
                c.cond.wait_for(lambda: c.removed)
            elif condition == "next-exit":
                c.cond.wait_for(lambda: c.exits > seen)
            else:
                c.cond.wait_for(lambda: c.state != "running")
            # A failed start is the start's error to report, not the wait's.
            return {"StatusCode": c.exit_code, "Error": None}

    def attach(self, ident):
        """Frames for an attach stream until the container's process ends."""
        c = self.find(ident)
        sink = []
        with c.cond:
            c.attached.append(sink)
            seen = c.exits
        try:
            while True:
                with c.cond:
                    c.cond.wait_for(lambda: sink or c.exits > seen or c.removed)
                    batch, sink[:] = list(sink), []
                    done = c.exits > seen or c.removed
                for stream, data in batch:
                    yield frame(stream, data)
                if done and not batch:
                    return
        finally:
            with c.cond:
                c.attached.remove(sink)

    def logs(self, ident, stdout, stderr):
        c = self.find(ident)
        with c.cond:
            return b"".join(frame(s, d) for s, d in c.output
                            if (s == 1 and stdout) or (s == 2 and stderr))

    def remove(self, ident, force):
        c = self.find(ident)
        if c.state == "running" and not force:
            raise ApiError(409, f"You cannot remove a running container {c.id}. "
                           "Stop the container before attempting removal or force remove")
        if c.state == "running":
            c.proc.kill()
        self.drop(c)

    def inspect(self, ident):
        c = self.find(ident)
        with c.cond:
            return {"Id": c.id, "Name": "/" + c.name, "Image": c.config.get("Image", ""),
                    "State": {"Status": c.state, "Running": c.state == "running",
                              "ExitCode": c.exit_code, "Error": c.error},
                    "Config": c.config, "HostConfig": c.host}
