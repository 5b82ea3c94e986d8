#!/usr/bin/env python3
"""kubelet stand-in: posts this node's status to the stand-in API server
every KUBE_HEARTBEAT_S seconds (default 10, like nodeStatusUpdateFrequency)
and plays the node-local part of DaemonSets the lab cares about: when the
flannel or calico-node DaemonSet exists it writes the CNI configuration the
API server hands it (/etc/cni/net.d/10-flannel.conflist or
10-calico.conflist, what their install-cni init containers write) and the
plugins' stand-ins under /opt/cni/bin, and when the GPU Operator's device
plugin is scheduled here it reports `nvidia-smi -L`.

`kubelet --once` posts once (twice if the answer changed what it reports)
and exits: 0 when the server took the status, 1 otherwise.
Like the real one it exits 1 when /var/lib/kubelet/config.yaml is missing
(before kubeadm init/join), so systemd's Restart=always keeps retrying.
"""
import os
import signal
import sys
import time
from datetime import datetime

import kubelib as kl

PLUGIN_STUB = """#!/bin/sh
# gpuctl lab stand-in for the %s CNI plugin (copied by the CNI's install-cni).
echo '{"cniVersion":"0.3.1"}'
"""


def klog(level, where, msg):
    t = datetime.now()
    sys.stderr.write("%s%s %s %7d %s] %s\n" % (level, t.strftime("%m%d"), t.strftime(
        "%H:%M:%S.%f"), os.getpid(), where, msg))
    sys.stderr.flush()


def node_files(resp):
    """Apply what the DaemonSets scheduled here would write on the node."""
    changed = False
    installed, active = kl.containerd_state()
    if installed and not active:
        return False  # no pod can start without the runtime
    if "cni-stall" in kl.faults():
        return False
    for name, content in sorted((resp.get("cni") or {}).items()):
        path = kl.rpath("/etc/cni/net.d/" + name)
        try:
            with open(path, encoding="utf-8") as f:
                same = f.read() == content
        except OSError:
            same = False
        if not same:
            kl.write_file(path, content)
            changed = True
    for name in resp.get("cniPlugins") or (["flannel"] if resp.get("cni") else []):
        plugin = kl.rpath("/opt/cni/bin/" + name)
        if not os.path.exists(plugin):
            kl.write_file(plugin, PLUGIN_STUB % name, 0o755)
    env = resp.get("flannelSubnetEnv")
    if env:
        path = kl.rpath("/run/flannel/subnet.env")
        try:
            with open(path, encoding="utf-8") as f:
                same = f.read() == env
        except OSError:
            same = False
        if not same:
            kl.write_file(path, env)
    return changed


class Kubelet:
    def __init__(self, kubeconfig, version):
        self.kubeconfig, self.version = kubeconfig, version
        self.first, self.want_devices = True, False
        self.devices, self.devices_at = None, 0.0

    def post(self):
        try:
            kc = kl.load_kubeconfig(self.kubeconfig)
        except (OSError, ValueError) as e:
            klog("E", "kubelet.go:1564", "\"Failed to load kubeconfig\" err=\"%s\"" % e)
            return None
        client = kl.Client.from_kubeconfig(kc, timeout=10)
        report = kl.node_report(self.version)
        if self.want_devices:
            # The device plugin re-checks GPUs; poll nvidia-smi at most every KUBE_DEVICE_POLL_S.
            if self.devices is None or time.time() - self.devices_at >= \
                    kl.setting("KUBE_DEVICE_POLL_S", 30):
                self.devices, self.devices_at = kl.nvidia_devices(), time.time()
            report["devices"] = self.devices
        try:
            resp = client.post("/gpuctl-lab/v1/heartbeat",
                               {"report": report, "register": self.first})
        except kl.ConnError as e:
            klog("E", "kubelet_node_status.go:544", "\"Error updating node status, will retry\" "
                 "err=\"error getting node \\\"%s\\\": Get \\\"https://%s/api/v1/nodes/%s?"
                 "timeout=10s\\\": %s\"" % (report["nodeName"], kc.hostport,
                                            report["nodeName"], e.dial()))
            return None
        except kl.ApiError as e:
            klog("E", "kubelet_node_status.go:544", "\"Error updating node status, will retry\" "
                 "err=\"%s\"" % e)
            return None
        self.first = False
        return resp

    def sync(self):
        resp = self.post()
        if resp is None:
            return False
        changed = node_files(resp)
        want = bool(resp.get("devicePlugin"))
        if changed or (want and not self.want_devices):
            self.want_devices = want
            return self.post() is not None
        self.want_devices = want
        return True


def main(argv):
    spec = {"kubeconfig": "str", "config": "str", "bootstrap-kubeconfig": "str", "once": "bool",
            "version": "bool", "node-ip": "str", "hostname-override": "str", "v": "str",
            "container-runtime-endpoint": "str", "pod-infra-container-image": "str"}
    try:
        opts, _, _ = kl.parse_flags(argv, spec, allow_unknown=True)
    except kl.UsageError as e:
        kl.die("Error: %s" % e)
    version = kl.package_version("kubelet")
    if opts.get("version"):
        print("Kubernetes v" + version)
        return 0
    config = opts.get("config") or kl.rpath("/var/lib/kubelet/config.yaml")
    if not os.path.exists(config):
        klog("E", "run.go:74", "\"command failed\" err=\"failed to load kubelet config file, "
             "path: %s, error: failed to load Kubelet config file %s, error failed to read "
             "kubelet config file \\\"%s\\\", error: open %s: no such file or directory\""
             % (config, config, config, config))
        return 1
    kubeconfig = opts.get("kubeconfig") or kl.rpath("/etc/kubernetes/kubelet.conf")
    if not os.path.exists(kubeconfig):
        boot = opts.get("bootstrap-kubeconfig") or kl.rpath(
            "/etc/kubernetes/bootstrap-kubelet.conf")
        klog("E", "run.go:74", "\"command failed\" err=\"failed to run Kubelet: unable to load "
             "bootstrap kubeconfig: stat %s: no such file or directory\"" % boot)
        return 1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    kubelet = Kubelet(kubeconfig, version)
    if "kubelet-stall" in kl.faults():
        klog("W", "kubelet.go:1", "gpuctl lab fault kubelet-stall: not posting node status")
        if opts.get("once"):
            return 1
        while True:
            time.sleep(3600)
    if opts.get("once"):
        return 0 if kubelet.sync() else 1
    klog("I", "server.go:487", "\"Kubelet version\" kubeletVersion=\"v%s\"" % version)
    # The real kubelet runs the control plane's static pods; here they are one
    # unit, which a (re)started kubelet starts while the manifest is there.
    if os.path.exists(kl.rpath("/etc/kubernetes/manifests/kube-apiserver.yaml")) and \
            kl.systemctl("is-active", "--quiet", "gpuctl-lab-apiserver.service") != 0:
        kl.systemctl("start", "--no-block", "gpuctl-lab-apiserver.service")
    interval = max(1, kl.setting("KUBE_HEARTBEAT_S", 10))
    while True:
        kubelet.sync()
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
