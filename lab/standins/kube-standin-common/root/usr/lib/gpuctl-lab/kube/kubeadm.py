#!/usr/bin/env python3
"""kubeadm stand-in: init, join, reset -f, token create|list, version -o short,
upgrade apply VERSION [-y] and upgrade node.

init runs real preflight checks (swap, sysctls, existing manifests, port),
creates a real CA with openssl (so the usual `openssl x509 -pubkey ...` pin
recipe works), writes the kubeconfigs/manifests/kubelet files, starts
gpuctl-lab-apiserver.service and registers the control-plane node there.
join does token discovery against the master over the lab network: it
checks the cluster-info JWS signature with the token secret and the CA pin,
then gets a kubelet client certificate signed by the cluster CA.
"""
import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import socket
import string
import subprocess
import signal
import sys
import time

import kubelib as kl

STACK_HINT = "To see the stack trace of this error execute with --v=5 or higher"
TOKEN_RE = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
K = "/etc/kubernetes"
MANIFESTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
IMAGES = {28: ("v1.10.1", "3.9"), 29: ("v1.11.1", "3.9"), 30: ("v1.11.3", "3.9"),
          31: ("v1.11.3", "3.10")}


def out(line=""):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def fail(msg, code=1):
    kl.die(msg + "\n" + STACK_HINT, code)


def phase_fail(phase, msg):
    fail("error execution phase %s: %s" % (phase, msg))


def gen_token():
    alpha = string.ascii_lowercase + string.digits
    return "%s.%s" % ("".join(secrets.choice(alpha) for _ in range(6)),
                      "".join(secrets.choice(alpha) for _ in range(16)))


def check_token(tok, field="token"):
    if not TOKEN_RE.match(tok or ""):
        fail("%s: Invalid value: \"%s\": the bootstrap token \"%s\" was not of the form "
             "\"[a-z0-9]{6}.[a-z0-9]{16}\"" % (field, tok, tok))


def images(version):
    coredns, pause = IMAGES.get(kl.minor(version), IMAGES[30])
    r = "registry.k8s.io/"
    return [r + "kube-apiserver:v" + version, r + "kube-controller-manager:v" + version,
            r + "kube-scheduler:v" + version, r + "kube-proxy:v" + version,
            r + "coredns/coredns:" + coredns, r + "pause:" + pause, r + "etcd:3.5.15-0"]


KUBELET_UNHEALTHY = (
    "The HTTP call equal to 'curl -sSL http://127.0.0.1:10248/healthz' returned error: Get "
    "\"http://127.0.0.1:10248/healthz\": dial tcp 127.0.0.1:10248: connect: connection "
    "refused.\n\nUnfortunately, an error has occurred, likely caused by:\n\t- The kubelet is "
    "not running\n\t- The kubelet is unhealthy due to a misconfiguration of the node in some "
    "way (required cgroups disabled)\n\nIf you are on a systemd-powered system, you can try "
    "to troubleshoot the error with the following commands:\n\t- 'systemctl status kubelet'"
    "\n\t- 'journalctl -xeu kubelet'")


# ------------------------------------------------------------------ preflight

def _port_in_use(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        return False
    except OSError:
        return True
    finally:
        s.close()


def _sysctl_files_set(key):
    """Is `key = 1` configured in sysctl.d/sysctl.conf (last file wins)?"""
    files = []
    for d in ("/usr/lib/sysctl.d", "/lib/sysctl.d", "/run/sysctl.d", "/etc/sysctl.d"):
        try:
            files += [(n, os.path.join(kl.rpath(d), n)) for n in os.listdir(kl.rpath(d))
                      if n.endswith(".conf")]
        except OSError:
            pass
    ordered = [p for _, p in sorted(files)] + [kl.rpath("/etc/sysctl.conf")]
    value = None
    for p in ordered:
        try:
            with open(p, encoding="utf-8") as f:
                for line in f:
                    m = re.match(r"^\s*-?\s*([\w./-]+)\s*=\s*(\S+)", line)
                    if m and m.group(1).replace("/", ".") == key:
                        value = m.group(2)
        except OSError:
            pass
    return value == "1"


def _sysctl_check(errors, path, key):
    name = "FileContent--proc-sys-" + path.replace("/", "-").replace(".", "-")
    full = kl.proc_path("/sys/" + path)
    try:
        with open(full, encoding="ascii") as f:
            if f.read().strip() != "1":
                errors.append((name, "/proc/sys/%s contents are not set to 1" % path))
    except OSError:
        # The lab cannot load br_netfilter (no modules); accept the persistent
        # configuration a real node would apply at boot instead.
        if not _sysctl_files_set(key):
            errors.append((name, "/proc/sys/%s does not exist" % path))


def _swap_on():
    try:
        with open(kl.proc_path("/swaps"), encoding="ascii") as f:
            return len([ln for ln in f.read().splitlines()[1:] if ln.strip()]) > 0
    except OSError:
        return False


def _kubelet_version():
    exe = shutil.which("kubelet")
    if not exe:
        return None, "couldn't get kubelet version: cannot execute 'kubelet --version': " \
                     "executable file not found in $PATH"
    try:
        r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "couldn't get kubelet version: %s" % e
    m = re.search(r"v(\d+\.\d+\.\d+)", r.stdout)
    if not m:
        return None, "couldn't get kubelet version: unexpected output %r" % r.stdout.strip()
    return m.group(1), None


def common_checks(errors, warnings, cp_version=None):
    installed, active = kl.containerd_state()
    if installed and not active:
        errors.append(("CRI", "container runtime is not running: output: time=\"%s\" "
                              "level=fatal msg=\"validate service connection: validate CRI v1 "
                              "runtime API for endpoint \\\"unix:///var/run/containerd/"
                              "containerd.sock\\\": rpc error: code = Unavailable desc = "
                              "connection error: desc = \\\"transport: Error while dialing: "
                              "dial unix /var/run/containerd/containerd.sock: connect: no such "
                              "file or directory\\\"\"\n, error: exit status 1"
                       % time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
    if _swap_on():
        errors.append(("Swap", "running with swap on is not supported. Please disable swap"))
    _sysctl_check(errors, "net/bridge/bridge-nf-call-iptables",
                  "net.bridge.bridge-nf-call-iptables")
    _sysctl_check(errors, "net/ipv4/ip_forward", "net.ipv4.ip_forward")
    kv, err = _kubelet_version()
    if err:
        errors.append(("KubeletVersion", err))
    elif cp_version:
        if kl.minor(kv) > kl.minor(cp_version):
            errors.append(("KubeletVersion", "the kubelet version is higher than the control "
                                             "plane version. This is not a supported version "
                                             "skew and may lead to a malfunctional cluster. "
                                             "Kubelet version: \"%s\" Control plane version: "
                                             "\"%s\"" % (kv, cp_version)))
        elif kl.minor(kv) < kl.minor(cp_version) - 3:
            errors.append(("KubeletVersion", "Kubelet version \"%s\" is lower than kubeadm can "
                                             "support. Please upgrade kubelet" % kv))
    if kl.systemctl("is-enabled", "--quiet", "kubelet.service") != 0:
        warnings.append(("Service-Kubelet", "kubelet service is not enabled, please run "
                                            "'systemctl enable kubelet.service'"))


def run_preflight(errors, warnings, ignore):
    ign = {x.strip().lower() for item in ignore for x in item.split(",") if x.strip()}
    fatal = []
    for name, msg in warnings:
        out("\t[WARNING %s]: %s" % (name, msg))
    for name, msg in errors:
        if "all" in ign or name.lower() in ign:
            out("\t[WARNING %s]: %s" % (name, msg))
        else:
            fatal.append((name, msg))
    if fatal:
        lines = "".join("\t[ERROR %s]: %s\n" % f for f in fatal)
        fail("error execution phase preflight: [preflight] Some fatal errors occurred:\n%s"
             "[preflight] If you know what you are doing, you can make a check non-fatal with "
             "`--ignore-preflight-errors=...`" % lines)


# ------------------------------------------------------------------ files

def static_pod(name, image, command, addr, extra_labels=None):
    labels = {"component": name, "tier": "control-plane"}
    labels.update(extra_labels or {})
    return kl.dump_yaml({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"annotations": {"kubeadm.kubernetes.io/kube-apiserver.advertise-address"
                                     ".endpoint" if name == "kube-apiserver" else
                                     "kubeadm.kubernetes.io/etcd.advertise-client-urls"
                                     if name == "etcd" else "gpuctl-lab/standin": addr},
                     "creationTimestamp": None, "labels": labels, "name": name,
                     "namespace": "kube-system"},
        "spec": {"containers": [{"command": command, "image": image,
                                 "imagePullPolicy": "IfNotPresent", "name": name,
                                 "resources": {"requests": {"cpu": "250m"}}}],
                 "hostNetwork": True, "priority": 2000001000,
                 "priorityClassName": "system-node-critical",
                 "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}},
        "status": {},
    })


def write_manifests(version, addr, port, pod_cidr, svc_cidr, name):
    imgs = images(version)
    d = kl.rpath(K + "/manifests")
    os.makedirs(d, exist_ok=True)
    api = ["kube-apiserver", "--advertise-address=" + addr, "--allow-privileged=true",
           "--authorization-mode=Node,RBAC", "--client-ca-file=/etc/kubernetes/pki/ca.crt",
           "--enable-admission-plugins=NodeRestriction", "--enable-bootstrap-token-auth=true",
           "--etcd-servers=https://127.0.0.1:2379", "--secure-port=%d" % port,
           "--service-cluster-ip-range=" + svc_cidr,
           "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt",
           "--tls-private-key-file=/etc/kubernetes/pki/apiserver.key"]
    cm = ["kube-controller-manager", "--allocate-node-cidrs=%s" % ("true" if pod_cidr else
                                                                    "false"),
          "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
          "--cluster-name=kubernetes", "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
          "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
          "--controllers=*,bootstrapsigner,tokencleaner",
          "--kubeconfig=/etc/kubernetes/controller-manager.conf", "--leader-elect=true",
          "--service-cluster-ip-range=" + svc_cidr, "--use-service-account-credentials=true"]
    if pod_cidr:
        cm.insert(3, "--cluster-cidr=" + pod_cidr)
    sched = ["kube-scheduler", "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
             "--bind-address=127.0.0.1", "--kubeconfig=/etc/kubernetes/scheduler.conf",
             "--leader-elect=true"]
    etcd = ["etcd", "--advertise-client-urls=https://%s:2379" % addr,
            "--data-dir=/var/lib/etcd", "--listen-client-urls=https://127.0.0.1:2379,https://%s"
            ":2379" % addr, "--name=" + name, "--initial-cluster=%s=https://%s:2380" % (name, addr)]
    kl.write_file(os.path.join(d, "kube-apiserver.yaml"),
                  static_pod("kube-apiserver", imgs[0], api, "%s:%d" % (addr, port)), 0o600)
    kl.write_file(os.path.join(d, "kube-controller-manager.yaml"),
                  static_pod("kube-controller-manager", imgs[1], cm, addr), 0o600)
    kl.write_file(os.path.join(d, "kube-scheduler.yaml"),
                  static_pod("kube-scheduler", imgs[2], sched, addr), 0o600)
    kl.write_file(os.path.join(d, "etcd.yaml"),
                  static_pod("etcd", imgs[6], etcd, "https://%s:2379" % addr), 0o600)


def write_kubelet_files(version):
    kl.write_file(kl.rpath("/var/lib/kubelet/config.yaml"), kl.dump_yaml({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"}},
        "authorization": {"mode": "Webhook"}, "cgroupDriver": "systemd",
        "clusterDNS": ["10.96.0.10"], "clusterDomain": "cluster.local",
        "containerRuntimeEndpoint": "", "failSwapOn": True, "healthzPort": 10248,
        "nodeStatusUpdateFrequency": "%ds" % kl.setting("KUBE_HEARTBEAT_S", 10),
        "rotateCertificates": True, "staticPodPath": "/etc/kubernetes/manifests",
    }))
    kl.write_file(kl.rpath("/var/lib/kubelet/kubeadm-flags.env"),
                  "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/"
                  "containerd/containerd.sock --pod-infra-container-image=%s\"\n"
                  % images(version)[5])


def write_kubelet_conf(server, ca_pem, cert_pem, key_pem, name):
    pem_path = "/var/lib/kubelet/pki/kubelet-client-current.pem"
    kl.write_file(kl.rpath(pem_path), cert_pem + key_pem, 0o600)
    kl.write_file(kl.rpath(K + "/kubelet.conf"),
                  kl.kubeconfig_doc(server, ca_pem, "system:node:" + name,
                                    cert_file=kl.rpath(pem_path), key_file=kl.rpath(pem_path)),
                  0o600)


def wait_kubelet(timeout):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if kl.systemctl("is-active", "--quiet", "kubelet") == 0:
            return time.time() - t0
        time.sleep(0.5)
    return None


# ------------------------------------------------------------------ init

def cmd_init(argv):
    # The flags gpuctl's k8s.init and the lab's tests pass.
    spec = {x: "str" for x in (
        "pod-network-cidr", "apiserver-advertise-address", "token-ttl", "node-name",
        "service-cidr")}
    spec.update({"ignore-preflight-errors": "list", "skip-token-print": "bool"})
    try:
        opts, pos, _ = kl.parse_flags(argv, spec)
    except kl.UsageError as e:
        fail(str(e))
    if pos:
        fail("unknown command \"%s\" for \"kubeadm init\"" % pos[0])
    # The cluster runs kubeadm's own version (no --kubernetes-version).
    version = kl.package_version("kubeadm")
    addr = opts.get("apiserver-advertise-address") or kl.node_address()
    port = kl.api_port()
    name = (opts.get("node-name") or kl.node_name()).lower()
    pod_cidr = opts.get("pod-network-cidr")
    svc_cidr = opts.get("service-cidr") or "10.96.0.0/12"
    endpoint = "%s:%d" % (addr, port)
    token = gen_token()
    try:
        ttl = kl.parse_duration(opts.get("token-ttl", "24h0m0s"))
    except ValueError as e:
        fail("invalid argument \"%s\" for \"--token-ttl\" flag: %s" % (opts["token-ttl"], e))

    out("[init] Using Kubernetes version: v" + version)
    out("[preflight] Running pre-flight checks")
    errors, warnings = [], []
    try:
        ncpu = len(os.sched_getaffinity(0))
    except AttributeError:
        ncpu = os.cpu_count() or 1
    if ncpu < 2:
        errors.append(("NumCPU", "the number of available CPUs %d is less than the required 2"
                       % ncpu))
    mem_mb = kl._meminfo_ki() // 1024
    if mem_mb < 1700:
        errors.append(("Mem", "the system RAM (%d MB) is less than the minimum 1700 MB" % mem_mb))
    if _port_in_use(port):
        errors.append(("Port-%d" % port, "Port %d is in use" % port))
    for m in MANIFESTS:
        p = "%s/manifests/%s.yaml" % (K, m)
        if os.path.exists(kl.rpath(p)):
            errors.append(("FileAvailable-%s" % p.replace("/", "-"), "%s already exists" % p))
    common_checks(errors, warnings, version)
    run_preflight(errors, warnings, opts.get("ignore-preflight-errors", []))

    for line in ("Pulling images required for setting up a Kubernetes cluster",
                 "This might take a minute or two, depending on the speed of your internet "
                 "connection",
                 "You can also perform this action beforehand using 'kubeadm config images "
                 "pull'"):
        out("[preflight] " + line)
    pki = kl.rpath(K + "/pki")
    out("[certs] Using certificateDir folder \"%s/pki\"" % K)
    out("[certs] Generating \"ca\" certificate and key")
    kl.make_ca(os.path.join(pki, "ca.crt"), os.path.join(pki, "ca.key"))
    with open(os.path.join(pki, "ca.crt"), encoding="ascii") as f:
        ca_pem = f.read()
    with open(os.path.join(pki, "ca.key"), encoding="ascii") as f:
        ca_key = f.read()
    out("[certs] Generating \"apiserver\" certificate and key")
    out("[certs] apiserver serving cert is signed for DNS names [kubernetes kubernetes.default "
        "kubernetes.default.svc kubernetes.default.svc.cluster.local %s] and IPs [10.96.0.1 %s]"
        % (name, addr))
    for c in ("apiserver-kubelet-client", "front-proxy-ca", "front-proxy-client", "etcd/ca",
              "etcd/server", "etcd/peer", "etcd/healthcheck-client",
              "apiserver-etcd-client"):
        out("[certs] Generating \"%s\" certificate and key" % c)
    out("[certs] Generating \"sa\" key and public key")

    server = "https://" + endpoint
    creds = {}
    ca_crt, ca_key_path = os.path.join(pki, "ca.crt"), os.path.join(pki, "ca.key")
    out("[kubeconfig] Using kubeconfig folder \"%s\"" % K)
    admins = [("admin.conf", "kubernetes-admin", "kubeadm:cluster-admins"
               if kl.minor(version) >= 29 else "system:masters", False)]
    if kl.minor(version) >= 29:
        admins.append(("super-admin.conf", "kubernetes-super-admin", "system:masters", False))
    admins += [("controller-manager.conf", "system:kube-controller-manager", "", True),
               ("scheduler.conf", "system:kube-scheduler", "", True)]
    for fname, user, group, ec in admins:
        if fname == "controller-manager.conf":
            out("[kubeconfig] Writing \"kubelet.conf\" kubeconfig file")
            kcert, kkey = kl.make_client_cert(ca_crt, ca_key_path, "/O=system:nodes/CN=system:"
                                              "node:" + name, ec=True)
            creds[kl.cert_fingerprint(kcert)] = {"user": "system:node:" + name,
                                                 "groups": ["system:nodes"], "node": name}
            write_kubelet_conf(server, ca_pem, kcert, kkey, name)
        out("[kubeconfig] Writing \"%s\" kubeconfig file" % fname)
        subj = ("/O=%s/CN=%s" % (group, user)) if group else "/CN=" + user
        cert, key = kl.make_client_cert(ca_crt, ca_key_path, subj, ec=ec)
        creds[kl.cert_fingerprint(cert)] = {"user": user, "groups": [group] if group else []}
        kl.write_file(kl.rpath(K + "/" + fname),
                      kl.kubeconfig_doc(server, ca_pem, user, cert, key), 0o600)
    out("[etcd] Creating static Pod manifest for local etcd in \"%s/manifests\"" % K)
    out("[control-plane] Using manifest folder \"%s/manifests\"" % K)
    for c in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        out("[control-plane] Creating static Pod manifest for \"%s\"" % c)
    write_manifests(version, addr, port, pod_cidr, svc_cidr, name)
    out("[kubelet-start] Writing kubelet environment file with flags to file "
        "\"/var/lib/kubelet/kubeadm-flags.env\"")
    out("[kubelet-start] Writing kubelet configuration to file \"/var/lib/kubelet/config.yaml\"")
    write_kubelet_files(version)
    kl.write_file(kl.rpath(K + "/gpuctl-lab-apiserver.env"),
                  "# Written by kubeadm init (gpuctl lab stand-in).\n"
                  "GPUCTL_APISERVER_BIND=0.0.0.0\nGPUCTL_APISERVER_PORT=%d\n"
                  "GPUCTL_APISERVER_STATE_DIR=/var/lib/gpuctl-lab/apiserver\n" % port)
    os.makedirs(kl.rpath("/var/lib/etcd/member"), exist_ok=True)
    out("[kubelet-start] Starting the kubelet")
    kl.systemctl("daemon-reload")
    kl.systemctl("enable", "kubelet.service")
    kl.systemctl("restart", "kubelet.service")
    # The real kubelet now starts the static pods; here the control plane is one unit.
    kl.systemctl("enable", "--now", "gpuctl-lab-apiserver.service")
    out("[wait-control-plane] Waiting for the kubelet to boot up the control plane as static "
        "Pods from directory \"%s/manifests\"" % K)
    kwait = kl.setting("KUBE_KUBELET_WAIT_S", 240)
    out("[kubelet-check] Waiting for a healthy kubelet at http://127.0.0.1:10248/healthz. This "
        "can take up to %s" % kl.format_duration(kwait))
    took = wait_kubelet(kwait)
    if took is None:
        out("[kubelet-check] The kubelet is not healthy after %s" % kl.format_duration(kwait))
        phase_fail("wait-control-plane", KUBELET_UNHEALTHY)
    out("[kubelet-check] The kubelet is healthy after %.9fs" % (took + 0.5))
    api_wait = kl.setting("KUBE_API_WAIT_S", 240)
    client = kl.Client("%s:%d" % (addr, port), timeout=5)
    t0 = time.time()
    healthy = False
    while time.time() - t0 < api_wait:
        try:
            if client.get("/healthz") == "ok":
                healthy = True
                break
        except (kl.ConnError, kl.ApiError):
            pass
        time.sleep(0.3)
    out("[api-check] Waiting for a healthy API server. This can take up to %s"
        % kl.format_duration(api_wait))
    if not healthy:
        out("[api-check] The API server is not healthy after %s" % kl.format_duration(api_wait))
        phase_fail("wait-control-plane", "could not initialize a Kubernetes cluster: "
                   "gpuctl-lab-apiserver.service did not answer on %s:%d (see "
                   "'journalctl -xeu gpuctl-lab-apiserver')" % (addr, port))
    out("[api-check] The API server is healthy after %.9fs" % (time.time() - t0))
    tid, tsecret = token.split(".")
    body = {
        "version": "v" + version, "podCIDR": pod_cidr, "serviceCIDR": svc_cidr,
        "endpoint": endpoint, "advertiseAddress": addr, "caCert": ca_pem, "caKey": ca_key,
        "credentials": creds,
        "token": {"id": tid, "secret": tsecret, "ttl": ttl,
                  "description": "The default bootstrap token generated by 'kubeadm init'."},
        "node": {"name": name, "report": kl.node_report(version)},
    }
    try:
        client.post("/gpuctl-lab/v1/init", body)
    except kl.ApiError as e:
        phase_fail("upload-config/kubeadm", "%s (gpuctl lab: the API server on %s:%d holds "
                   "another cluster's state)" % (e, addr, port))
    except kl.ConnError as e:
        phase_fail("upload-config/kubeadm", "Post \"https://%s:%d/api/v1/namespaces/kube-system/"
                   "configmaps?timeout=10s\": %s" % (addr, port, e.dial()))
    out("[upload-config] Storing the configuration used in ConfigMap \"kubeadm-config\" in the "
        "\"kube-system\" Namespace")
    out("[kubelet] Creating a ConfigMap \"kubelet-config\" in namespace kube-system with the "
        "configuration for the kubelets in the cluster")
    out("[upload-certs] Skipping phase. Please see --upload-certs")
    out("[mark-control-plane] Marking the node %s as control-plane by adding the labels: "
        "[node-role.kubernetes.io/control-plane node.kubernetes.io/exclude-from-external-load-"
        "balancers]" % name)
    out("[mark-control-plane] Marking the node %s as control-plane by adding the taints "
        "[node-role.kubernetes.io/control-plane:NoSchedule]" % name)
    if not opts.get("skip-token-print"):
        out("[bootstrap-token] Using token: " + token)
    for line in ("Configuring bootstrap tokens, cluster-info ConfigMap, RBAC Roles",
                 "Configured RBAC rules to allow Node Bootstrap tokens to get nodes",
                 "Configured RBAC rules to allow Node Bootstrap tokens to post CSRs in order "
                 "for nodes to get long term certificate credentials",
                 "Configured RBAC rules to allow the csrapprover controller automatically "
                 "approve CSRs from a Node Bootstrap Token",
                 "Configured RBAC rules to allow certificate rotation for all node client "
                 "certificates in the cluster",
                 "Creating the \"cluster-info\" ConfigMap in the \"kube-public\" namespace"):
        out("[bootstrap-token] " + line)
    out("[kubelet-finalize] Updating \"%s/kubelet.conf\" to point to a rotatable kubelet client "
        "certificate and key" % K)
    out("[addons] Applied essential addon: CoreDNS")
    out("[addons] Applied essential addon: kube-proxy")
    pin = kl.ca_pin(ca_pem)
    out("""
Your Kubernetes control-plane has initialized successfully!

To start using your cluster, you need to run the following as a regular user:

  mkdir -p $HOME/.kube
  sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config
  sudo chown $(id -u):$(id -g) $HOME/.kube/config

Alternatively, if you are the root user, you can run:

  export KUBECONFIG=/etc/kubernetes/admin.conf

You should now deploy a pod network to the cluster.
Run "kubectl apply -f [podnetwork].yaml" with one of the options listed at:
  https://kubernetes.io/docs/concepts/cluster-administration/addons/

Then you can join any number of worker nodes by running the following on each as root:
""")
    out("kubeadm join %s --token %s \\\n\t--discovery-token-ca-cert-hash %s "
        % (endpoint, "<value withheld>" if opts.get("skip-token-print") else token, pin))
    return 0


# ------------------------------------------------------------------ join

def discover(endpoint, token, pins):
    """Token discovery: fetch cluster-info, check its JWS and the CA pin."""
    tid, secret = token.split(".")
    timeout = kl.setting("KUBE_DISCOVERY_TIMEOUT_S", 60)
    client = kl.Client(endpoint, timeout=10)
    t0 = time.time()
    last = None
    while True:
        try:
            cm = client.get("/api/v1/namespaces/kube-public/configmaps/cluster-info")
            data = cm.get("data") or {}
            sig = data.get("jws-kubeconfig-" + tid)
            if sig:
                break
            last = "could not find a JWS signature in the cluster-info ConfigMap for token ID " \
                   "\"%s\"" % tid
        except kl.ConnError as e:
            last = "Get \"https://%s/api/v1/namespaces/kube-public/configmaps/cluster-info?" \
                   "timeout=10s\": %s" % (endpoint, e.dial())
        except kl.ApiError as e:
            last = "Get \"https://%s/api/v1/namespaces/kube-public/configmaps/cluster-info?" \
                   "timeout=10s\": %s" % (endpoint, e)
        if time.time() - t0 >= timeout:
            phase_fail("preflight", "couldn't validate the identity of the API Server: " + last)
        time.sleep(1)
    kc = data["kubeconfig"]
    header, _, mac = sig.partition("..")
    want = kl.b64url(hmac.new(secret.encode(), (header + "." + kl.b64url(kc.encode())).encode(),
                              hashlib.sha256).digest())
    if not hmac.compare_digest(mac, want):
        phase_fail("preflight", "couldn't validate the identity of the API Server: failed to "
                   "verify JWS signature of received cluster info object, can't trust this API "
                   "Server")
    doc = kl.load_yaml(kc)
    cluster = doc["clusters"][0]["cluster"]
    ca_pem = base64.b64decode(cluster["certificate-authority-data"]).decode()
    actual = kl.ca_pin(ca_pem)
    if actual not in pins:
        phase_fail("preflight", "couldn't validate the identity of the API Server: cluster CA "
                   "found in cluster-info ConfigMap is invalid: none of the public keys \"%s\" "
                   "are pinned" % actual)
    return cluster["server"], ca_pem


def cmd_join(argv):
    # The flags of init's join command, plus gpuctl's --node-name.
    spec = {"token": "str", "node-name": "str", "discovery-token-ca-cert-hash": "list",
            "ignore-preflight-errors": "list"}
    try:
        opts, pos, _ = kl.parse_flags(argv, spec)
    except kl.UsageError as e:
        fail(str(e))
    token = opts.get("token")
    endpoint = pos[0] if pos else ""
    if not endpoint or not token:
        fail("discovery: Invalid value: \"\": bootstrapToken or file must be set")
    check_token(token, "discovery.bootstrapToken.token")
    pins = []
    for p in opts.get("discovery-token-ca-cert-hash", []):
        pins += [x.strip() for x in p.split(",") if x.strip()]
    if not pins:
        fail("discovery.bootstrapToken: Invalid value: \"\": using token-based discovery without "
             "caCertHashes can be unsafe. Set unsafeSkipCAVerification as true in your kubeadm "
             "config file or pass --discovery-token-unsafe-skip-ca-verification flag to continue")
    for p in pins:
        if not re.match(r"^sha256:[0-9a-f]{64}$", p):
            fail("discovery.bootstrapToken.caCertHashes: Invalid value: \"%s\": invalid hash "
                 "\"%s\", expected a \"sha256\" hash" % (p, p) if p.startswith("sha256:") else
                 "discovery.bootstrapToken.caCertHashes: Invalid value: \"%s\": unknown hash "
                 "type in \"%s\"" % (p, p))
    if ":" not in endpoint:
        endpoint += ":6443"
    name = (opts.get("node-name") or kl.node_name()).lower()
    version = kl.package_version("kubeadm")

    out("[preflight] Running pre-flight checks")
    errors, warnings = [], []
    for p in (K + "/kubelet.conf", K + "/bootstrap-kubelet.conf", K + "/pki/ca.crt"):
        if os.path.exists(kl.rpath(p)):
            errors.append(("FileAvailable-" + p.replace("/", "-"), "%s already exists" % p))
    common_checks(errors, warnings)
    run_preflight(errors, warnings, opts.get("ignore-preflight-errors", []))
    server, ca_pem = discover(endpoint, token, pins)
    out("[preflight] Reading configuration from the cluster...")
    out("[preflight] FYI: You can look at this config file with 'kubectl -n kube-system get cm "
        "kubeadm-config -o yaml'")
    out("[kubelet-start] Writing kubelet configuration to file \"/var/lib/kubelet/config.yaml\"")
    out("[kubelet-start] Writing kubelet environment file with flags to file "
        "\"/var/lib/kubelet/kubeadm-flags.env\"")
    out("[kubelet-start] Starting the kubelet")
    csr, key = kl.make_csr("/O=system:nodes/CN=system:node:" + name)
    hostport = re.sub(r"^[a-z]+://", "", server).rstrip("/")
    client = kl.Client(hostport, bearer=token, timeout=20)
    try:
        resp = client.post("/gpuctl-lab/v1/join", {"node": name, "csr": csr,
                                                   "report": kl.node_report(version)})
    except kl.ApiError as e:
        if e.code == 409:
            phase_fail("kubelet-start", str(e))
        phase_fail("kubelet-start", "failed to request a client certificate from the API "
                   "server: %s" % ("Unauthorized" if e.code == 401 else e))
    except kl.ConnError as e:
        phase_fail("kubelet-start", "Post \"%s/apis/certificates.k8s.io/v1/"
                   "certificatesigningrequests?timeout=10s\": %s" % (server, e.dial()))
    kl.write_file(kl.rpath(K + "/pki/ca.crt"), ca_pem)
    write_kubelet_files(version)
    write_kubelet_conf(server, ca_pem, resp["cert"], key, name)
    kl.systemctl("enable", "kubelet.service")
    kl.systemctl("restart", "kubelet.service")
    wait = kl.setting("KUBE_KUBELET_WAIT_S", 240)
    out("[kubelet-check] Waiting for a healthy kubelet at http://127.0.0.1:10248/healthz. This "
        "can take up to %s" % kl.format_duration(wait))
    took = wait_kubelet(wait)
    if took is None:
        out("[kubelet-check] The kubelet is not healthy after %s" % kl.format_duration(wait))
        phase_fail("kubelet-start", KUBELET_UNHEALTHY)
    out("[kubelet-check] The kubelet is healthy after %.9fs" % (took + 0.5))
    out("[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap")
    out("""
This node has joined the cluster:
* Certificate signing request was sent to apiserver and a response was received.
* The Kubelet was informed of the new secure connection details.

Run 'kubectl get nodes' on the control-plane to see this node join the cluster.
""")
    return 0


# ------------------------------------------------------------------ reset

def cmd_reset(argv):
    spec = {"force": "bool"}
    try:
        opts, _, _ = kl.parse_flags(argv, spec, aliases={"f": "force"})
    except kl.UsageError as e:
        fail(str(e))
    cp = os.path.exists(kl.rpath(K + "/manifests/kube-apiserver.yaml")) or \
        os.path.exists(kl.rpath(K + "/gpuctl-lab-apiserver.env"))
    if not opts.get("force"):
        sys.stdout.write("[reset] WARNING: Changes made to this host by 'kubeadm init' or "
                         "'kubeadm join' will be reverted.\n[reset] Are you sure you want to "
                         "proceed? [y/N]: ")
        sys.stdout.flush()
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            fail("error execution phase preflight: won't proceed; the user didn't answer (Y|n) "
                 "in order to continue")
    out("[preflight] Running pre-flight checks")
    if cp:
        kl.systemctl("disable", "--now", "gpuctl-lab-apiserver.service")
        shutil.rmtree(kl.rpath("/var/lib/gpuctl-lab/apiserver"), ignore_errors=True)
        shutil.rmtree(kl.rpath("/var/lib/etcd"), ignore_errors=True)
        out("[reset] Deleted contents of the etcd data directory: /var/lib/etcd")
    else:
        out("[reset] No etcd config found. Assuming external etcd")
        out("[reset] Please, manually reset etcd to prevent further issues")
    out("[reset] Stopping the kubelet service")
    kl.systemctl("stop", "kubelet.service")
    out("[reset] Unmounting mounted directories in \"/var/lib/kubelet\"")
    dirs = [K + "/manifests", "/var/lib/kubelet", K + "/pki"]
    for d in dirs:
        p = kl.rpath(d)
        if os.path.isdir(p):
            for n in os.listdir(p):
                q = os.path.join(p, n)
                if os.path.isdir(q) and not os.path.islink(q):
                    shutil.rmtree(q, ignore_errors=True)
                else:
                    os.unlink(q)
    out("[reset] Deleting contents of directories: [%s]" % " ".join(dirs))
    files = [K + "/" + f for f in ("admin.conf", "super-admin.conf", "kubelet.conf",
                                   "bootstrap-kubelet.conf", "controller-manager.conf",
                                   "scheduler.conf")]
    for f in files + [K + "/gpuctl-lab-apiserver.env"]:
        try:
            os.unlink(kl.rpath(f))
        except OSError:
            pass
    out("[reset] Deleting files: [%s]" % " ".join(files))
    out("""
The reset process does not clean CNI configuration. To do so, you must remove /etc/cni/net.d

The reset process does not reset or clean up iptables rules or IPVS tables.
If you wish to reset iptables, you must do so manually by using the "iptables" command.

If your cluster was setup to utilize IPVS, run ipvsadm --clear (or similar)
to reset your system's IPVS tables.

The reset process does not clean your kubeconfig files and you must remove them manually.
Please, check the contents of the $HOME/.kube/config file.""")
    return 0


# ------------------------------------------------------------------ upgrade

def cluster_version(conf):
    """The control plane's version (x.y.z), asked of the API server."""
    try:
        kc = kl.load_kubeconfig(kl.rpath(conf))
    except (OSError, ValueError) as e:
        fail("unable to read config from %s: %s" % (conf, e))
    try:
        info = kl.Client.from_kubeconfig(kc).request("GET", "/version")
    except kl.ConnError as e:
        fail("[upgrade/init config] FATAL: failed to get the Kubernetes version of the cluster: "
             "Get \"https://%s/version\": %s" % (kc.hostport, e.dial()))
    except kl.ApiError as e:
        fail("[upgrade/init config] FATAL: %s" % e)
    return info["gitVersion"].lstrip("v"), kc


def version_tuple(v):
    m = re.match(r"^v?(\d+)\.(\d+)\.(\d+)$", v or "")
    return tuple(int(x) for x in m.groups()) if m else None


def upgrade_policy(target, cluster, kubeadm):
    """kubeadm's version skew policy for upgrade apply: the fatal errors."""
    errors = []
    t, c, k = version_tuple(target), version_tuple(cluster), version_tuple(kubeadm)
    if t[1] > c[1] + 1:
        errors.append("Specified version to upgrade to \"v%s\" is too high; kubeadm can "
                      "upgrade only 1 minor version at a time" % target)
    if t[1] < c[1]:
        # (The stand-in's words: the lab never downgrades a control plane.)
        errors.append("Specified version to upgrade to \"v%s\" is lower than the cluster "
                      "version \"v%s\": downgrades across minor versions are not "
                      "supported" % (target, cluster))
    if k < t:
        errors.append("Specified version to upgrade to \"v%s\" is higher than the kubeadm "
                      "version \"v%s\". Upgrade kubeadm first using the tool you used to "
                      "install kubeadm" % (target, kubeadm))
    return errors


def retag_manifests(version):
    """The control plane's static pods at the new version (etcd stays)."""
    d = kl.rpath(K + "/manifests")
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        path = os.path.join(d, name + ".yaml")
        with open(path) as f:
            text = f.read()
        kl.write_file(path, re.sub(r"(registry\.k8s\.io/%s:)v[0-9.]+" % name,
                                   r"\g<1>v" + version, text), 0o600)


def cmd_upgrade_apply(argv):
    spec = {"yes": "bool", "force": "bool", "ignore-preflight-errors": "list"}
    try:
        opts, pos, _ = kl.parse_flags(argv, spec, aliases={"y": "yes", "f": "force"})
    except kl.UsageError as e:
        fail(str(e))
    if len(pos) != 1:
        fail("missing one or more required arguments: specify a version to upgrade to")
    target = pos[0].lstrip("v")
    if version_tuple(target) is None:
        fail("[upgrade/version] FATAL: invalid version \"%s\"" % pos[0])
    if not os.path.exists(kl.rpath(K + "/admin.conf")):
        fail("[upgrade/init config] FATAL: couldn't load kubeconfig: open %s/admin.conf: no such "
             "file or directory" % K)
    out("[preflight] Running pre-flight checks.")
    out("[upgrade/config] Reading configuration from the cluster...")
    cluster, kc = cluster_version(K + "/admin.conf")
    kubeadm = kl.package_version("kubeadm")
    out("[upgrade] Running cluster health checks")
    out("[upgrade/version] You have chosen to change the cluster version to \"v%s\"" % target)
    out("[upgrade/versions] Cluster version: v%s" % cluster)
    out("[upgrade/versions] kubeadm version: v%s" % kubeadm)
    errors = upgrade_policy(target, cluster, kubeadm)
    if errors:
        fail("[upgrade/version] FATAL: the --version argument is invalid due to these fatal "
             "errors:\n\n%s\nPlease fix the misalignments highlighted above and try upgrading "
             "again" % "".join("\t- %s\n" % e for e in errors))
    if not (opts.get("yes") or opts.get("force")):
        sys.stdout.write("[upgrade] Are you sure you want to proceed? [y/N]: ")
        sys.stdout.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            fail("won't proceed; the user didn't answer (Y|n) in order to continue")
    out("[upgrade/prepull] Pulling images required for setting up a Kubernetes cluster")
    out("[upgrade/apply] Upgrading your Static Pod-hosted control plane to version \"v%s\"..."
        % target)
    retag_manifests(target)
    try:
        kl.Client.from_kubeconfig(kc).request("POST", "/gpuctl-lab/v1/upgrade",
                                              {"version": "v" + target})
    except (kl.ConnError, kl.ApiError) as e:
        fail("[upgrade/apply] FATAL: couldn't upgrade control plane: %s" % e)
    write_kubelet_files(target)
    out("[upgrade/kubelet-config] The kubelet configuration for this node was successfully "
        "updated!")
    out("")
    out("[upgrade/successful] SUCCESS! Your cluster was upgraded to \"v%s\". Enjoy!" % target)
    out("")
    out("[upgrade/kubelet] Now that your control plane is upgraded, please proceed with "
        "upgrading your kubelets if you haven't already done so.")
    return 0


def cmd_upgrade_node(argv):
    try:
        kl.parse_flags(argv, {"ignore-preflight-errors": "list"})
    except kl.UsageError as e:
        fail(str(e))
    conf = K + "/kubelet.conf"
    if not os.path.exists(kl.rpath(conf)):
        fail("couldn't create a Kubernetes client from file \"%s\": failed to load admin "
             "kubeconfig: open %s: no such file or directory" % (conf, conf))
    out("[upgrade] Reading configuration from the cluster...")
    cluster, _ = cluster_version(conf)
    kubeadm = kl.package_version("kubeadm")
    # The node's kubelet configuration is the cluster's version's: a kubeadm
    # of another minor would write another.
    if kl.minor(kubeadm) != kl.minor(cluster):
        fail("[upgrade] FATAL: the kubeadm version \"v%s\" does not match the cluster version "
             "\"v%s\": upgrade kubeadm to the cluster's version first" % (kubeadm, cluster))
    out("[preflight] Running pre-flight checks")
    out("[preflight] Skipping prepull. Not a control plane node.")
    out("[upgrade] Skipping phase. Not a control plane node.")
    write_kubelet_files(cluster)
    out("[upgrade] The configuration for this node was successfully updated!")
    out("[upgrade] Now you should go ahead and upgrade the kubelet package using your package "
        "manager.")
    return 0


def cmd_upgrade(argv):
    sub = argv[0] if argv else ""
    if sub == "apply":
        return cmd_upgrade_apply(argv[1:])
    if sub == "node":
        return cmd_upgrade_node(argv[1:])
    fail("unknown command \"%s\" for \"kubeadm upgrade\"" % sub)
    return 1


# ------------------------------------------------------------------ token

def token_client(opts):
    path = opts.get("kubeconfig") or kl.rpath(K + "/admin.conf")
    try:
        kc = kl.load_kubeconfig(path)
    except FileNotFoundError:
        fail("failed to load admin kubeconfig: open %s: no such file or directory" % path)
    except (OSError, ValueError) as e:
        fail("failed to load admin kubeconfig: %s" % e)
    return kl.Client.from_kubeconfig(kc), kc


def api_call(what, fn, kc):
    try:
        return fn()
    except kl.ConnError as e:
        fail("%s: Get \"https://%s/api/v1/namespaces/kube-system/secrets?fieldSelector=type%%3D"
             "bootstrap.kubernetes.io%%2Ftoken\": %s" % (what, kc.hostport, e.dial()))
    except kl.ApiError as e:
        fail("%s: %s" % (what, e))


def cmd_token(argv):
    sub = argv[0] if argv else ""
    spec = {"kubeconfig": "str", "ttl": "str", "print-join-command": "bool", "output": "str"}
    try:
        opts, _, _ = kl.parse_flags(argv[1:], spec, aliases={"o": "output"})
    except kl.UsageError as e:
        fail(str(e))
    if sub == "create":
        token = gen_token()
        try:
            ttl = kl.parse_duration(opts.get("ttl", "24h0m0s"))
        except ValueError as e:
            fail("invalid argument \"%s\" for \"--ttl\" flag: %s" % (opts.get("ttl"), e))
        # kubeadm's defaults for a join token.
        usages = ["authentication", "signing"]
        groups = ["system:bootstrappers:kubeadm:default-node-token"]
        client, kc = token_client(opts)
        tid, secret = token.split(".")
        api_call("failed to create or update bootstrap token with name bootstrap-token-" + tid,
                 lambda: client.post("/gpuctl-lab/v1/tokens", {
                     "id": tid, "secret": secret, "ttl": ttl, "usages": usages,
                     "groups": groups, "description": ""}), kc)
        if opts.get("print-join-command"):
            out("kubeadm join %s --token %s --discovery-token-ca-cert-hash %s "
                % (kc.hostport, token, kl.ca_pin(kc.ca_pem)))
        else:
            out(token)
        return 0
    if sub == "list":
        client, kc = token_client(opts)
        toks = api_call("failed to list bootstrap tokens",
                        lambda: client.get("/gpuctl-lab/v1/tokens"), kc)["tokens"]
        fmt = opts.get("output", "")
        if fmt == "json":
            for t in toks:
                obj = {"kind": "BootstrapToken",
                       "apiVersion": "output.kubeadm.k8s.io/v1alpha3",
                       "token": "%s.%s" % (t["id"], t["secret"]),
                       "description": t["description"], "usages": t["usages"],
                       "groups": t["groups"]}
                if t.get("expires"):
                    obj["expires"] = kl.rfc3339(t["expires"])
                out(json.dumps(obj, indent=4))
            return 0
        rows = [["TOKEN", "TTL", "EXPIRES", "USAGES", "DESCRIPTION", "EXTRA GROUPS"]]
        for t in toks:
            if t.get("expires"):
                ttl = kl.short_human_duration(t["expires"] - time.time())
                exp = kl.rfc3339(t["expires"])
            else:
                ttl, exp = "<forever>", "<never>"
            rows.append(["%s.%s" % (t["id"], t["secret"]), ttl, exp, ",".join(t["usages"]),
                         t["description"] or "<none>", ",".join(t["groups"])])
        sys.stdout.write(kl.tabwriter(rows, minwidth=10, padding=3))
        return 0
    fail("unknown command \"%s\" for \"kubeadm token\"" % sub if sub else
         "missing subcommand; \"token\" is not meant to be run on its own")
    return 1


# ------------------------------------------------------------------ misc

def cmd_version(argv):
    try:
        opts, _, _ = kl.parse_flags(argv, {"output": "str"}, aliases={"o": "output"})
    except kl.UsageError as e:
        fail(str(e))
    v = kl.package_version("kubeadm")
    info = kl.version_info(v)
    fmt = opts.get("output", "")
    if fmt == "short":
        out("v" + v)
    elif fmt:
        fail("invalid output format: " + fmt)
    else:
        out("kubeadm version: &version.Info{Major:\"%s\", Minor:\"%s\", GitVersion:\"%s\", "
            "GitCommit:\"%s\", GitTreeState:\"%s\", BuildDate:\"%s\", GoVersion:\"%s\", "
            "Compiler:\"%s\", Platform:\"%s\"}" % tuple(info[k] for k in (
                "major", "minor", "gitVersion", "gitCommit", "gitTreeState", "buildDate",
                "goVersion", "compiler", "platform")))
    return 0


USAGE = """\n    ┌──────────────────────────────────────────────────────────┐
    │ KUBEADM                                                  │
    │ Easily bootstrap a secure Kubernetes cluster             │
    └──────────────────────────────────────────────────────────┘

(gpuctl lab stand-in)

Usage:
  kubeadm [command]

Available Commands:
  init        Run this command in order to set up the Kubernetes control plane
  join        Run this on any machine you wish to join an existing cluster
  reset       Performs a best effort revert of changes made to this host by 'kubeadm init' or 'kubeadm join'
  token       Manage bootstrap tokens
  upgrade     Upgrade your cluster smoothly to a newer version with this command
  version     Print the version of kubeadm
"""


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    cmds = {"init": cmd_init, "join": cmd_join, "reset": cmd_reset, "token": cmd_token,
            "upgrade": cmd_upgrade, "version": cmd_version}
    fn = cmds.get(argv[0])
    if fn is None:
        fail("unknown command \"%s\" for \"kubeadm\"" % argv[0])
    return fn(argv[1:])


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # die quietly on a closed pipe, as Go tools do
    sys.exit(main(sys.argv[1:]))
