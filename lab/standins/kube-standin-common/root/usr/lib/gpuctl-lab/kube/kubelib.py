"""Shared code for the gpuctl lab Kubernetes stand-ins (kubeadm, kubelet,
kubectl, helm, and the stand-in API server). Standard library and PyYAML
(python3-yaml).

Environment overrides (used by the unit tests, harmless on lab nodes):
  GPUCTL_KUBE_ROOT     prefix for every filesystem path (/etc/kubernetes,
                       /var/lib/kubelet, /etc/cni/net.d, /var/lib/gpuctl-lab...)
  GPUCTL_KUBE_PROC     where /proc is (preflight reads swaps and sysctls there)
  GPUCTL_LAB_PROFILE   node profile file (default $ROOT/etc/gpuctl-lab/profile.env)
  GPUCTL_KUBE_SYSTEMCTL  systemctl binary ("true" makes unit handling a no-op)
  GPUCTL_KUBE_API_PORT API server port (default 6443)
  GPUCTL_KUBE_<NAME>   any lab setting, overriding KUBE_<NAME> in the profile
"""
import base64
import datetime
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import yaml

LIBDIR = os.path.dirname(os.path.abspath(__file__))
DEFAULT_VERSION = "1.30.6"
GIT_COMMITS = {  # stand-in build metadata per minor (shape of version.Info)
    "28": ("2024-10-22T20:27:29Z", "go1.22.8"),
    "29": ("2024-10-22T20:31:13Z", "go1.22.8"),
    "30": ("2024-10-22T20:33:38Z", "go1.22.8"),
    "31": ("2024-10-22T20:34:27Z", "go1.22.8"),
}


# ------------------------------------------------------------ YAML

class _KubeDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, printing multi-line strings as literal blocks
    ("key: |") the way kubectl and helm (go-yaml) do, so a ConfigMap's
    embedded JSON stays readable and sed-able."""


def _represent_str(dumper, text):
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_KubeDumper.add_representer(str, _represent_str)


def dump_yaml(obj):
    """obj as YAML in kubectl's layout: sorted keys, block style, sequences
    not indented under their key, and no line folding."""
    return yaml.dump(obj, Dumper=_KubeDumper, default_flow_style=False,
                     sort_keys=True, allow_unicode=True, width=1 << 30)


def load_yaml(text):
    """The first YAML document of text (None when empty); a syntax error
    is a ValueError, like a JSON one, so callers handle both alike."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(str(e)) from e


def load_yaml_all(text):
    """Every document of a multi-document YAML text, as a list."""
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        raise ValueError(str(e)) from e


# ------------------------------------------------------------ paths, profile

def root():
    """GPUCTL_KUBE_ROOT, or the other stand-ins' GPUCTL_LAB_ROOT (tests only)."""
    return (os.environ.get("GPUCTL_KUBE_ROOT") or os.environ.get("GPUCTL_LAB_ROOT") or
            "").rstrip("/")


def rpath(p):
    """System path p (absolute) under $GPUCTL_KUBE_ROOT."""
    return root() + p


def proc_path(p):
    return os.environ.get("GPUCTL_KUBE_PROC", "/proc").rstrip("/") + p


def read_env_file(path):
    out = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#") or "=" not in line:
                    continue
                k, v = line.split("=", 1)
                k = k.strip()
                if k.startswith("export "):
                    k = k[7:].strip()
                v = v.strip()
                if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                    v = v[1:-1]
                out[k] = v
    except OSError:
        pass
    return out


_PROFILE = None


def profile():
    global _PROFILE
    if _PROFILE is None:
        path = os.environ.get("GPUCTL_LAB_PROFILE") or rpath("/etc/gpuctl-lab/profile.env")
        _PROFILE = read_env_file(path)
    return _PROFILE


def setting(name, default):
    """Lab knob: env GPUCTL_<name> beats profile <name> beats default."""
    v = os.environ.get("GPUCTL_" + name)
    if v is None:
        v = profile().get(name)
    if v is None or v == "":
        return default
    if isinstance(default, bool):
        return v.lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        try:
            return int(v)
        except ValueError:
            return default
    if isinstance(default, float):
        try:
            return float(v)
        except ValueError:
            return default
    return v


def faults():
    """Fault names in the profile's FAULTS (space-separated words, name[=value])."""
    return {w.partition("=")[0] for w in re.split(r"[,\s]+", profile().get("FAULTS", "")) if w}


def api_port():
    return int(os.environ.get("GPUCTL_KUBE_API_PORT", "6443"))


def node_name():
    n = profile().get("LAB_NODE") or socket.gethostname()
    return n.strip().lower()


def node_address():
    a = profile().get("LAB_ADDRESS")
    if a:
        return a.split("/")[0]
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect(("198.18.0.1", 9))
        a = s.getsockname()[0]
        s.close()
        return a
    except OSError:
        return "127.0.0.1"


def write_file(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp%d" % os.getpid()
    with open(tmp, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def systemctl(*args):
    """Run systemctl (or $GPUCTL_KUBE_SYSTEMCTL); returns the exit code."""
    exe = os.environ.get("GPUCTL_KUBE_SYSTEMCTL", "systemctl")
    try:
        return subprocess.run([exe] + list(args), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=60).returncode
    except (OSError, subprocess.TimeoutExpired):
        return 1


def containerd_state():
    """(installed, active). Installed = a containerd unit or binary exists."""
    installed = any(os.path.exists(rpath(p)) for p in (
        "/usr/lib/systemd/system/containerd.service", "/lib/systemd/system/containerd.service",
        "/etc/systemd/system/containerd.service", "/usr/bin/containerd",
        "/usr/local/bin/containerd"))
    if not installed:
        return False, False
    return True, systemctl("is-active", "--quiet", "containerd") == 0


# ------------------------------------------------------------ versions

def _dpkg_version(pkg):
    try:
        with open(rpath("/var/lib/dpkg/status"), encoding="utf-8", errors="replace") as f:
            text = "\n" + f.read()
    except OSError:
        return None
    i = text.find("\nPackage: %s\n" % pkg)
    while i >= 0:
        end = text.find("\n\n", i + 1)
        para = text[i:end if end >= 0 else len(text)]
        if "\nStatus: install ok installed" in para:
            m = re.search(r"^Version: (.+)$", para, re.M)
            if m:
                return m.group(1)
        i = text.find("\nPackage: %s\n" % pkg, i + 1)
    return None


def _rpm_version(pkg):
    if root() or not os.path.isdir("/var/lib/rpm") or not shutil.which("rpm"):
        return None
    try:
        r = subprocess.run(["rpm", "-q", "--qf", "%{VERSION}", pkg], capture_output=True,
                           text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def _version_file(pkg):
    """Written by the package at build time (pkg_stage): versions/<package>."""
    try:
        with open(os.path.join(LIBDIR, "versions", pkg), encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return None


def package_version(pkg):
    """Kubernetes version (x.y.z) of an installed stand-in package."""
    for get in (lambda: os.environ.get("GPUCTL_KUBE_VERSION_" + pkg.upper().replace("-", "_")),
                lambda: os.environ.get("GPUCTL_KUBE_VERSION"), lambda: _version_file(pkg),
                lambda: _dpkg_version(pkg), lambda: _rpm_version(pkg)):
        # Only Kubernetes-shaped versions count: a host may carry another
        # "kubectl" package (Google Cloud SDK's is 1:528.0.0-0).
        m = re.match(r"^v?(1)\.(\d+)\.(\d+)", get() or "")
        if m:
            return "%s.%s.%s" % m.groups()
    return DEFAULT_VERSION


def minor(version):
    m = re.search(r"(\d+)\.(\d+)", version)
    return int(m.group(2)) if m else 0


def version_info(version):
    """The Go version.Info fields the real binaries print."""
    major, mnr, _ = version.split(".")
    build, gover = GIT_COMMITS.get(mnr, ("2024-10-22T20:33:38Z", "go1.22.8"))
    return {
        "major": major, "minor": mnr, "gitVersion": "v" + version,
        "gitCommit": hashlib.sha1(("v" + version).encode()).hexdigest(),
        "gitTreeState": "clean", "buildDate": build, "goVersion": gover, "compiler": "gc",
        "platform": "linux/amd64",
    }


# ------------------------------------------------------------ time

def now():
    return time.time()


def rfc3339(t):
    return datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def human_duration(seconds):
    """k8s.io/apimachinery duration.HumanDuration (kubectl's AGE column)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return "%ds" % s
    m = s // 60
    if m < 10:
        return "%dm" % m if s % 60 == 0 else "%dm%ds" % (m, s % 60)
    if m < 180:
        return "%dm" % m
    h = s // 3600
    if h < 8:
        return "%dh" % h if m % 60 == 0 else "%dh%dm" % (h, m % 60)
    if h < 48:
        return "%dh" % h
    if h < 24 * 8:
        return "%dd" % (h // 24) if h % 24 == 0 else "%dd%dh" % (h // 24, h % 24)
    if h < 24 * 365 * 2:
        return "%dd" % (h // 24)
    if h < 24 * 365 * 8:
        dy = (h // 24) % 365
        return "%dy" % (h // 24 // 365) if dy == 0 else "%dy%dd" % (h // 24 // 365, dy)
    return "%dy" % (h // 24 // 365)


def short_human_duration(seconds):
    """duration.ShortHumanDuration (kubeadm token list's TTL column)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60:
        return "%ds" % s
    if s < 3600:
        return "%dm" % (s // 60)
    if s < 48 * 3600:
        return "%dh" % (s // 3600)
    if s < 365 * 24 * 3600:
        return "%dd" % (s // 86400)
    return "%dy" % (s // (365 * 86400))


_DUR_RE = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")


def parse_duration(text):
    """Go time.ParseDuration; returns seconds or raises ValueError."""
    t = text.strip()
    if t in ("0", "+0", "-0"):
        return 0.0
    pos, total = 0, 0.0
    scale = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    for m in _DUR_RE.finditer(t):
        if m.start() != pos:
            break
        total += float(m.group(1)) * scale[m.group(2)]
        pos = m.end()
    if pos != len(t) or not t:
        raise ValueError('time: invalid duration "%s"' % text)
    return total


def format_duration(seconds):
    """Go time.Duration.String() for whole seconds: 24h0m0s, 4m0s, 30s."""
    s = int(seconds)
    if s == 0:
        return "0s"
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return "%dh%dm%ds" % (h, m, sec)
    if m:
        return "%dm%ds" % (m, sec)
    return "%ds" % sec


# ------------------------------------------------------------ CLI helpers

class UsageError(Exception):
    pass


def parse_flags(argv, spec, aliases=None, allow_unknown=False):
    """Cobra/pflag-like parsing. spec: {"name": "str"|"bool"|"list"}.
    Returns (opts, positionals, unknown). "list" flags accumulate."""
    aliases = aliases or {}
    opts, pos, unknown = {}, [], []
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a == "--":
            pos.extend(argv[i:])
            break
        if not a.startswith("-") or a == "-":
            pos.append(a)
            continue
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
        else:
            name, val = a[1:2], a[2:]
            eq = "=" if val else ""
            if val.startswith("="):
                val = val[1:]
        name = aliases.get(name, name)
        kind = spec.get(name)
        if kind is None:
            if allow_unknown:
                unknown.append(a)
                continue
            raise UsageError("unknown flag: %s" % (a.split("=")[0] if a.startswith("--")
                                                    else "-" + a[1:2]))
        if kind == "bool":
            opts[name] = (val.lower() in ("true", "1", "")) if eq else True
            continue
        if not eq:
            if i >= len(argv):
                raise UsageError("flag needs an argument: %s" % a)
            val = argv[i]
            i += 1
        if kind == "list":
            opts.setdefault(name, []).append(val)
        else:
            opts[name] = val
    return opts, pos, unknown


def die(msg, code=1):
    sys.stdout.flush()
    sys.stderr.write(msg if msg.endswith("\n") else msg + "\n")
    sys.exit(code)


def tabwriter(rows, minwidth=6, padding=3):
    """Go text/tabwriter as kubectl uses it: every cell but a line's last is
    padded to the column width (max cell + padding, at least minwidth)."""
    if not rows:
        return ""
    ncol = max(len(r) for r in rows)
    widths = [0] * ncol
    for r in rows:
        for j, c in enumerate(r[:-1]):
            widths[j] = max(widths[j], len(c) + padding, minwidth)
    out = []
    for r in rows:
        cells = [c.ljust(widths[j]) for j, c in enumerate(r[:-1])] + r[-1:]
        out.append("".join(cells))
    return "\n".join(out) + "\n"


def uitable(rows):
    """gosuri/uitable as helm uses it: cells padded to column width, joined by tabs."""
    if not rows:
        return ""
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    return "".join("\t".join(c.ljust(widths[j]) for j, c in enumerate(r)) + "\n"
                   for r in rows)


# ------------------------------------------------------------ PKI

def pem_blocks(text, label="CERTIFICATE"):
    if isinstance(text, bytes):
        text = text.decode("ascii", "replace")
    out = []
    for m in re.finditer(r"-----BEGIN %s-----(.*?)-----END %s-----" % (label, label), text, re.S):
        try:
            out.append(base64.b64decode("".join(m.group(1).split())))
        except ValueError:
            pass
    return out


def pem_encode(der, label):
    b = base64.b64encode(der).decode()
    return "-----BEGIN %s-----\n%s\n-----END %s-----\n" % (
        label, "\n".join(b[i:i + 64] for i in range(0, len(b), 64)), label)


def _der_items(buf, pos, end):
    """Yield (start, content_start, content_end) TLVs between pos and end."""
    while pos < end:
        start = pos
        pos += 1
        ln = buf[pos]
        pos += 1
        if ln & 0x80:
            n = ln & 0x7F
            ln = int.from_bytes(buf[pos:pos + n], "big")
            pos += n
        yield start, pos, pos + ln
        pos += ln


def ca_pin(cert_pem):
    """kubeadm's CA pin: sha256 over the certificate's SubjectPublicKeyInfo."""
    ders = pem_blocks(cert_pem)
    if not ders:
        raise ValueError("no certificate found")
    der = ders[0]
    try:
        _, c0, c1 = next(_der_items(der, 0, len(der)))
        _, t0, t1 = next(_der_items(der, c0, c1))
        fields = list(_der_items(der, t0, t1))
        idx = 6 if der[fields[0][0]] == 0xA0 else 5
        s, _, e = fields[idx]
        spki = der[s:e]
    except (StopIteration, IndexError):
        spki = der  # a lab "fake" certificate (no openssl): pin the whole blob
    return "sha256:" + hashlib.sha256(spki).hexdigest()


def cert_fingerprint(cert_pem):
    ders = pem_blocks(cert_pem)
    return hashlib.sha256(ders[0]).hexdigest() if ders else ""


def _openssl(args, data=None):
    r = subprocess.run(["openssl"] + args, input=data, capture_output=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (args[0], r.stderr.decode(errors="replace")))
    return r.stdout


def have_openssl():
    return shutil.which("openssl") is not None and not os.environ.get("GPUCTL_KUBE_NO_OPENSSL")


def make_ca(crt_path, key_path, cn="kubernetes"):
    """Self-signed CA, as kubeadm's "ca" cert (RSA 2048, 10 years)."""
    os.makedirs(os.path.dirname(crt_path), exist_ok=True)
    if have_openssl():
        _openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key_path,
                  "-out", crt_path, "-days", "3650", "-subj", "/CN=" + cn,
                  "-addext", "basicConstraints=critical,CA:TRUE",
                  "-addext", "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign"])
        os.chmod(key_path, 0o600)
    else:
        write_file(key_path, pem_encode(secrets.token_bytes(1190), "RSA PRIVATE KEY"), 0o600)
        write_file(crt_path, pem_encode(b"gpuctl-lab-fake-ca:" + secrets.token_bytes(700),
                                        "CERTIFICATE"))


def make_client_cert(ca_crt, ca_key, subject, ec=False):
    """(cert_pem, key_pem) for a client identity signed by the CA."""
    if not have_openssl():
        return (pem_encode(b"gpuctl-lab-fake-cert:" + subject.encode() + b":" +
                           secrets.token_bytes(400), "CERTIFICATE"),
                pem_encode(secrets.token_bytes(400), "EC PRIVATE KEY" if ec else
                           "RSA PRIVATE KEY"))
    key = _openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
                   if ec else ["genpkey", "-algorithm", "RSA", "-pkeyopt",
                               "rsa_keygen_bits:2048"])
    with tempfile.TemporaryDirectory() as d:
        kp = os.path.join(d, "k.pem")
        write_file(kp, key, 0o600)
        csr = _openssl(["req", "-new", "-key", kp, "-subj", subject])
    return sign_csr(csr, ca_crt, ca_key), key.decode()


def make_csr(subject):
    """(csr_pem, key_pem): what the kubelet sends during TLS bootstrap (ECDSA P-256)."""
    if not have_openssl():
        return pem_encode(json.dumps({"subject": subject}).encode(), "CERTIFICATE REQUEST"), \
            pem_encode(secrets.token_bytes(121), "EC PRIVATE KEY")
    key = _openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
    with tempfile.TemporaryDirectory() as d:
        kp = os.path.join(d, "k.pem")
        write_file(kp, key, 0o600)
        csr = _openssl(["req", "-new", "-key", kp, "-subj", subject])
    return csr.decode(), key.decode()


def sign_csr(csr_pem, ca_crt, ca_key, days=365):
    if isinstance(csr_pem, str):
        csr_pem = csr_pem.encode()
    if not have_openssl() or not os.path.exists(ca_key) or b"gpuctl-lab" in csr_pem:
        return pem_encode(b"gpuctl-lab-fake-cert:" + hashlib.sha256(csr_pem).digest() +
                          secrets.token_bytes(300), "CERTIFICATE")
    with tempfile.TemporaryDirectory() as d:
        ext = os.path.join(d, "ext")
        write_file(ext, "keyUsage=critical,digitalSignature,keyEncipherment\n"
                        "extendedKeyUsage=clientAuth\nbasicConstraints=critical,CA:FALSE\n")
        out = _openssl(["x509", "-req", "-CA", ca_crt, "-CAkey", ca_key, "-days", str(days),
                        "-set_serial", str(int.from_bytes(secrets.token_bytes(8), "big")),
                        "-extfile", ext], csr_pem)
    return out.decode()


def b64(data):
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# ------------------------------------------------------------ kubeconfig

def kubeconfig_doc(server, ca_pem, user, cert_pem=None, key_pem=None, cert_file=None,
                   key_file=None, cluster="kubernetes"):
    u = {}
    if cert_file:
        u = {"client-certificate": cert_file, "client-key": key_file}
    elif cert_pem:
        u = {"client-certificate-data": b64(cert_pem), "client-key-data": b64(key_pem)}
    ctx = "%s@%s" % (user, cluster)
    return dump_yaml({
        "apiVersion": "v1",
        "clusters": [{"cluster": {"certificate-authority-data": b64(ca_pem), "server": server},
                      "name": cluster}],
        "contexts": [{"context": {"cluster": cluster, "user": user}, "name": ctx}],
        "current-context": ctx, "kind": "Config", "preferences": {},
        "users": [{"name": user, "user": u}],
    })


class KubeConfig:
    def __init__(self, path, server, ca_pem, cert_pem):
        self.path, self.server, self.ca_pem, self.cert_pem = path, server, ca_pem, cert_pem

    @property
    def hostport(self):
        return re.sub(r"^[a-z]+://", "", self.server).rstrip("/")


def find_kubeconfig(explicit=None, admin_fallback=True):
    """--kubeconfig, then $KUBECONFIG, ~/.kube/config, /etc/kubernetes/admin.conf."""
    if explicit:
        return explicit
    env = os.environ.get("KUBECONFIG")
    if env:
        for p in env.split(":"):
            if p and os.path.exists(p):
                return p
    home = os.path.expanduser("~/.kube/config")
    if os.path.exists(home):
        return home
    if admin_fallback and os.path.exists(rpath("/etc/kubernetes/admin.conf")) and \
            not setting("KUBE_STRICT_KUBECONFIG", False):
        return rpath("/etc/kubernetes/admin.conf")
    return None


def load_kubeconfig(path):
    """Returns KubeConfig, or raises OSError/ValueError."""
    with open(path, encoding="utf-8") as f:
        doc = load_yaml(f.read()) or {}
    base = os.path.dirname(os.path.abspath(path))

    def named(kind, name):
        for item in doc.get(kind) or []:
            if item.get("name") == name:
                return item.get(kind[:-1]) or {}
        return None

    def data(d, key):
        if d.get(key + "-data"):
            return base64.b64decode(d[key + "-data"]).decode(errors="replace")
        if d.get(key):
            p = d[key] if d[key].startswith("/") else os.path.join(base, d[key])
            with open(p, encoding="utf-8") as f:
                return f.read()
        return ""

    ctx = named("contexts", doc.get("current-context"))
    if ctx is None:
        raise ValueError("invalid configuration: no configuration has been provided")
    cl = named("clusters", ctx.get("cluster")) or {}
    user = named("users", ctx.get("user")) or {}
    return KubeConfig(path, cl.get("server", "http://localhost:8080"),
                      data(cl, "certificate-authority"), data(user, "client-certificate"))


# ------------------------------------------------------------ HTTP client

class ConnError(Exception):
    """Could not reach the server; .hostport and .reason (refused/timeout/...)."""

    def __init__(self, hostport, reason):
        super().__init__("%s: %s" % (hostport, reason))
        self.hostport, self.reason = hostport, reason

    def dial(self):
        return "dial tcp %s: %s" % (self.hostport, self.reason)


class ApiError(Exception):
    def __init__(self, code, status):
        self.code, self.status = code, status
        super().__init__(status.get("message", "error %d" % code))

    @property
    def reason(self):
        return self.status.get("reason", "")


class Client:
    """Plain-HTTP client for the stand-in API server. The kubeconfig keeps the
    real https:// URL; the lab server speaks HTTP on the same host:port."""

    def __init__(self, hostport, cert_pem=None, ca_pem=None, bearer=None, timeout=10):
        self.hostport = hostport
        self.headers = {"Content-Type": "application/json", "User-Agent": "gpuctl-lab-kube"}
        if cert_pem:
            self.headers["X-Gpuctl-Lab-Cert"] = cert_fingerprint(cert_pem)
        if ca_pem:
            try:
                self.headers["X-Gpuctl-Lab-Ca"] = ca_pin(ca_pem)
            except ValueError:
                pass
        if bearer:
            self.headers["Authorization"] = "Bearer " + bearer
        self.timeout = timeout

    @classmethod
    def from_kubeconfig(cls, kc, timeout=10):
        return cls(kc.hostport, kc.cert_pem, kc.ca_pem, timeout=timeout)

    def request(self, method, path, body=None, query=None):
        import urllib.error  # noqa: PLC0415 - costly import, only when talking to a server
        import urllib.request  # noqa: PLC0415
        url = "http://%s%s" % (self.hostport, path)
        if query:
            url += "?" + "&".join("%s=%s" % (k, urllib.request.quote(str(v)))
                                  for k, v in query.items())
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method, headers=self.headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                st = json.loads(raw)
            except ValueError:
                st = {"message": raw.decode(errors="replace").strip(), "code": e.code}
            raise ApiError(e.code, st) from None
        except urllib.error.URLError as e:
            raise ConnError(self.hostport, _reason(e.reason)) from None
        except (socket.timeout, TimeoutError):
            raise ConnError(self.hostport, "i/o timeout") from None
        except (ConnectionError, OSError) as e:
            raise ConnError(self.hostport, _reason(e)) from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    def get(self, path, **q):
        return self.request("GET", path, query=q or None)

    def post(self, path, body):
        return self.request("POST", path, body)


def _reason(e):
    if isinstance(e, ConnectionRefusedError):
        return "connect: connection refused"
    if isinstance(e, (socket.timeout, TimeoutError)):
        return "i/o timeout"
    if isinstance(e, OSError) and e.errno == 113:
        return "connect: no route to host"
    if isinstance(e, OSError) and e.errno == 101:
        return "connect: network is unreachable"
    if isinstance(e, socket.gaierror):
        return "lookup: no such host"
    return "connect: %s" % (getattr(e, "strerror", None) or e)


def kubectl_conn_message(err):
    if err.reason == "connect: connection refused":
        return ("The connection to the server %s was refused - did you specify the right "
                "host or port?" % err.hostport)
    return "Unable to connect to the server: %s" % err.dial()


def api_error_message(err):
    """kubectl's rendering of an API Status error."""
    if err.code == 401:
        return "error: You must be logged in to the server (Unauthorized)"
    if err.code == 495:
        return ("Unable to connect to the server: tls: failed to verify certificate: x509: "
                "certificate signed by unknown authority (possibly because of \"crypto/rsa: "
                "verification error\" while trying to verify candidate authority certificate "
                "\"kubernetes\")")
    reason = err.reason or "InternalError"
    return "Error from server (%s): %s" % (reason, err.status.get("message", ""))


def admin_client(explicit=None, timeout=10, admin_fallback=True):
    """Client from the kubeconfig kubectl would use; (client, None) or (None, message)."""
    path = find_kubeconfig(explicit, admin_fallback)
    if path is None:
        return None, ("The connection to the server localhost:8080 was refused - did you "
                      "specify the right host or port?")
    try:
        kc = load_kubeconfig(path)
    except FileNotFoundError:
        return None, "error: stat %s: no such file or directory" % path
    except (OSError, ValueError) as e:
        return None, "error: %s" % e
    return Client.from_kubeconfig(kc, timeout), kc


# ------------------------------------------------------------ node report

def _meminfo_ki():
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 8 * 1024 * 1024


def _os_image():
    d = read_env_file(rpath("/etc/os-release")) or read_env_file("/etc/os-release")
    return d.get("PRETTY_NAME", "Linux")


_RUNTIME_VERSION = None


def _runtime_version():
    global _RUNTIME_VERSION
    if _RUNTIME_VERSION is None:
        _RUNTIME_VERSION = "containerd://unknown"
        exe = shutil.which("containerd")
        if exe and not root():
            try:
                out = subprocess.run([exe, "--version"], capture_output=True, text=True,
                                     timeout=10).stdout.split()
                if len(out) >= 3:
                    _RUNTIME_VERSION = "containerd://" + out[2].lstrip("v")
            except (OSError, subprocess.TimeoutExpired):
                pass
    return _RUNTIME_VERSION


def nvidia_devices():
    """What the device plugin would see: `nvidia-smi -L` on this node."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return {"ok": False, "count": 0, "error": "nvidia-smi: executable file not found"}
    try:
        r = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"ok": False, "count": 0, "error": str(e)}
    gpus = re.findall(r"^GPU \d+: (.+?)(?: \(UUID: .*\))?$", r.stdout, re.M)
    if r.returncode != 0 or not gpus:
        msg = (r.stdout + r.stderr).strip().splitlines()
        return {"ok": False, "count": 0, "error": msg[0] if msg else "exit %d" % r.returncode}
    # MIG devices by profile, and the GPUs that list none (whole GPUs).
    mig, partitioned, gpu = [], set(), None
    for line in r.stdout.splitlines():
        if re.match(r"GPU \d+:", line):
            gpu = line.split(":")[0]
        elif re.match(r" +MIG ", line):
            mig.append(line.split()[1])
            partitioned.add(gpu)
    return {"ok": True, "count": len(gpus), "product": gpus[0].strip(), "listing": r.stdout,
            "mig": mig, "whole": len(gpus) - len(partitioned)}


def cni_configured():
    d = rpath("/etc/cni/net.d")
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return []
    good = []
    for n in names:
        if n.endswith((".conflist", ".conf", ".json")):
            try:
                with open(os.path.join(d, n), encoding="utf-8") as f:
                    json.load(f)
                good.append(n)
            except (OSError, ValueError):
                pass
    return good


def node_report(version, with_devices=False):
    """The node status a kubelet posts (capacity, nodeInfo, runtime/CNI/GPU facts)."""
    prof = profile()
    mem = _meminfo_ki()
    try:
        st = os.statvfs(rpath("/") or "/")
        disk_ki = st.f_blocks * st.f_frsize // 1024
    except OSError:
        disk_ki = 100 * 1024 * 1024
    try:
        cpus = int(prof.get("CPU_COUNT") or len(os.sched_getaffinity(0)))
    except (ValueError, AttributeError):
        cpus = os.cpu_count() or 1
    installed, active = containerd_state()
    try:
        gpu_pci = int(prof.get("GPU_COUNT", "0") or 0)
    except ValueError:
        gpu_pci = 0
    rep = {
        "nodeName": node_name(),
        "address": node_address(),
        "hostname": socket.gethostname(),
        "capacity": {"cpu": str(cpus), "memory": "%dKi" % mem, "pods": "110",
                     "ephemeral-storage": "%dKi" % disk_ki, "hugepages-1Gi": "0",
                     "hugepages-2Mi": "0"},
        "allocatable": {"cpu": str(cpus), "memory": "%dKi" % max(mem - 102400, 0),
                        "pods": "110", "ephemeral-storage": str(disk_ki * 1024 * 9 // 10),
                        "hugepages-1Gi": "0", "hugepages-2Mi": "0"},
        "nodeInfo": {
            "architecture": "amd64", "operatingSystem": "linux", "osImage": _os_image(),
            "kernelVersion": os.uname().release, "kubeletVersion": "v" + version,
            "kubeProxyVersion": "v" + version, "containerRuntimeVersion": _runtime_version(),
            "machineID": hashlib.md5(node_name().encode()).hexdigest(),
            "systemUUID": str(hashlib.md5(("uuid" + node_name()).encode()).hexdigest()),
            "bootID": hashlib.md5(("boot%d" % int(time.time() // 86400)).encode()).hexdigest(),
        },
        "runtime": {"installed": installed, "active": active},
        "cni": cni_configured(),
        "pciGpus": gpu_pci,
        "gpuModel": prof.get("GPU_MODEL", ""),
    }
    if with_devices:
        rep["devices"] = nvidia_devices()
    return rep
