#!/usr/bin/env python3
"""gpuctl lab stand-in for kube-apiserver (plus the bits of etcd, the
controller-manager, the scheduler and the GPU Operator the lab needs).

Plain HTTP on ADDR:6443 (the kubeconfigs still say https://, like the real
ones; every stand-in client speaks HTTP to that host:port). State is one JSON
file, <state-dir>/state.json, rewritten atomically after every change.

Stored: cluster facts (version, pod CIDR, CA), client credentials (by
certificate fingerprint), bootstrap tokens, nodes with the kubelet's last
status report, namespaces, applied objects, helm releases.
Derived on every read: node conditions (Ready from heartbeat age, CNI,
container runtime), GPU labels/allocatable (GPU Operator release + the
node's nvidia-smi), and the pods/daemonsets/deployments that would run.
"""
import argparse
import hashlib
import hmac
import ipaddress
import json
import os
import re
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import kubelib as kl

LOCK = threading.RLock()
STORE = None
CLUSTER_SCOPED = {
    "Namespace", "ClusterRole", "ClusterRoleBinding", "Node", "RuntimeClass",
    "CustomResourceDefinition", "PersistentVolume", "StorageClass", "PriorityClass",
    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService",
    "IngressClass", "CSIDriver",
}
SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class Http(Exception):
    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class Store:
    def __init__(self, state_dir):
        self.dir = state_dir
        self.path = os.path.join(state_dir, "state.json")
        os.makedirs(state_dir, mode=0o700, exist_ok=True)
        try:
            with open(self.path, encoding="utf-8") as f:
                self.s = json.load(f)
        except (OSError, ValueError):
            self.s = {"initialized": False}

    def save(self):
        self.s["resourceVersion"] = self.s.get("resourceVersion", 1000) + 1
        kl.write_file(self.path, json.dumps(self.s, sort_keys=True), 0o600)


def grace():
    return kl.setting("KUBE_GRACE_S", 40)


def sfx(seed, n=5):
    h = hashlib.sha256(seed.encode()).digest()
    return "".join(ALPHABET[b % len(ALPHABET)] for b in h[:n])


def uid(seed):
    return str(uuid.UUID(hashlib.md5(seed.encode()).hexdigest()))


def get_value(values, dotted, default):
    cur = values
    for part in dotted.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return default
    return cur


def truthy(v):
    return v is True or str(v).lower() == "true"


# ------------------------------------------------------------------ views

def gpu_release(s):
    for r in sorted(s.get("releases", {}).values(), key=lambda r: r["firstDeployed"]):
        if r.get("chartName") == "gpu-operator" and r.get("status") == "deployed":
            return r
    return None


def gpu_state(s, rec, ready):
    """What the GPU Operator's operands would do on this node (None: not scheduled)."""
    rel = gpu_release(s)
    rep = rec.get("report") or {}
    if not rel or int(rep.get("pciGpus") or 0) <= 0:
        return None
    driver_ctr = truthy(get_value(rel["values"], "driver.enabled", True))
    dev = rep.get("devices") or {}
    dev_ok = bool(dev.get("ok")) and int(dev.get("count") or 0) > 0
    running = bool(ready and dev_ok and not driver_ctr)
    # The device plugin's mig.strategy (the chart's default: single): MIG
    # devices as nvidia.com/gpu, or as nvidia.com/mig-<profile> beside the
    # whole GPUs (mixed).
    resources = {}
    mig = dev.get("mig") or []
    if running and mig:
        if get_value(rel["values"], "mig.strategy", "single") == "mixed":
            resources["nvidia.com/gpu"] = int(dev.get("whole") or 0)
            for p in mig:
                resources["nvidia.com/mig-" + p] = resources.get("nvidia.com/mig-" + p, 0) + 1
        else:
            resources["nvidia.com/gpu"] = len(mig)
    return {"release": rel, "driverContainer": driver_ctr, "devOk": dev_ok, "resources": resources,
            "running": running, "count": int(dev.get("count") or 0) if running else 0,
            "product": dev.get("product") or rep.get("gpuModel") or "NVIDIA-GPU",
            "toolkit": truthy(get_value(rel["values"], "toolkit.enabled", True)),
            "dcgm": truthy(get_value(rel["values"], "dcgmExporter.enabled", True))}


def node_health(rec, t):
    """(fresh, runtime_ok, Ready status, reason, message)."""
    rep = rec.get("report") or {}
    hb = rec.get("heartbeat")
    if not hb or t - hb > grace():
        return False, False, "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."
    rt = rep.get("runtime") or {}
    runtime_ok = not rt.get("installed") or rt.get("active")
    if not runtime_ok:
        return True, False, "False", "KubeletNotReady", (
            "container runtime is down, PLEG is not healthy: pleg was last seen active "
            "3m0s ago; threshold is 3m0s")
    if not rep.get("cni"):
        return True, True, "False", "KubeletNotReady", (
            "container runtime network not ready: NetworkReady=false "
            "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin "
            "not initialized")
    return True, True, "True", "KubeletReady", "kubelet is posting ready status"


def node_view(s, rec, t):
    rep = rec.get("report") or {}
    fresh, _, rstatus, reason, msg = node_health(rec, t)
    hb = rec.get("heartbeat") or rec["created"]
    prev = rec.get("readyCond") or {}
    if prev.get("status") != rstatus:
        since = hb + grace() if rstatus == "Unknown" else t
        rec["readyCond"] = prev = {"status": rstatus, "since": since}
    conds = []
    for ctype, okreason, okmsg in (
            ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available")):
        if fresh:
            conds.append({"type": ctype, "status": "False", "reason": okreason, "message": okmsg,
                          "lastHeartbeatTime": kl.rfc3339(hb),
                          "lastTransitionTime": kl.rfc3339(rec["created"])})
        else:
            conds.append({"type": ctype, "status": "Unknown", "reason": "NodeStatusUnknown",
                          "message": "Kubelet stopped posting node status.",
                          "lastHeartbeatTime": kl.rfc3339(hb),
                          "lastTransitionTime": kl.rfc3339(prev["since"])})
    conds.append({"type": "Ready", "status": rstatus, "reason": reason, "message": msg,
                  "lastHeartbeatTime": kl.rfc3339(hb),
                  "lastTransitionTime": kl.rfc3339(prev["since"])})
    labels = dict(rec.get("labels") or {})
    capacity = dict(rep.get("capacity") or {})
    alloc = dict(rep.get("allocatable") or {})
    gs = gpu_state(s, rec, rstatus == "True")
    if gs:
        labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
        labels["nvidia.com/gpu.present"] = "true"
        for comp in ("container-toolkit", "dcgm", "dcgm-exporter", "device-plugin", "driver",
                     "gpu-feature-discovery", "node-status-exporter", "operator-validator"):
            labels["nvidia.com/gpu.deploy." + comp] = "true"
        if gs["running"]:
            labels["nvidia.com/gpu.count"] = str(gs["count"])
            labels["nvidia.com/gpu.product"] = "-".join(str(gs["product"]).split())
            labels["nvidia.com/gpu.replicas"] = "1"
        capacity["nvidia.com/gpu"] = alloc["nvidia.com/gpu"] = str(gs["count"])
        for name, n in gs["resources"].items():
            capacity[name] = alloc[name] = str(n)
    taints = [dict(x) for x in rec.get("taints") or []]
    if rstatus == "False":
        taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
    elif rstatus == "Unknown":
        taints.append({"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule",
                       "timeAdded": kl.rfc3339(prev["since"])})
    if rec.get("unschedulable"):  # kubectl cordon
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                       "timeAdded": kl.rfc3339(rec["unschedulable"])})
    spec = {"unschedulable": True} if rec.get("unschedulable") else {}
    if rec.get("podCIDR"):
        spec["podCIDR"] = rec["podCIDR"]
        spec["podCIDRs"] = [rec["podCIDR"]]
    if taints:
        spec["taints"] = taints
    annotations = dict(rec.get("annotations") or {})
    if rec.get("flannel"):
        annotations.update(rec["flannel"])
    addresses = []
    if rep.get("address"):
        addresses.append({"address": rep["address"], "type": "InternalIP"})
    addresses.append({"address": rec["name"], "type": "Hostname"})
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": rec["name"], "uid": rec["uid"], "labels": labels,
                     "annotations": annotations,
                     "creationTimestamp": kl.rfc3339(rec["created"]),
                     "resourceVersion": str(s.get("resourceVersion", 1000))},
        "spec": spec,
        "status": {"addresses": addresses, "allocatable": alloc, "capacity": capacity,
                   "conditions": conds,
                   "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                   "images": [], "nodeInfo": rep.get("nodeInfo") or {}},
    }


def crashloop_restarts(elapsed):
    """Restart count of a container crash-looping for `elapsed` seconds."""
    n, t, delay = 0, 0.0, 10.0
    while t + delay <= elapsed:
        t += delay + 2
        n += 1
        delay = min(delay * 2, 300.0)
    return max(n, 1), t


class Pods:
    """Builds the pods (and their owning workloads) the cluster would run."""

    def __init__(self, s, t):
        self.s, self.t = s, t
        self.items, self.workloads = [], {}
        self.logs = {}  # (namespace, pod) -> log text, for pods that ran
        self.ipnext = {}
        self.nodes = [r for r in sorted(s.get("nodes", {}).values(), key=lambda r: r["created"])]
        self.health = {r["name"]: node_health(r, t) for r in self.nodes}
        # A cordon moves nothing: a controller's pods that ran on a node when
        # it was cordoned stay there until evicted (patch_node, evict).
        self.pinned = {ref: r for r in self.nodes for ref in r.get("pinned") or []}

    def alive(self, n):
        h = self.health[n]
        return h[0] and h[1]

    def ready(self, n):
        return self.health[n][2] == "True"

    def cp(self, rec):
        return any(x.get("key") == "node-role.kubernetes.io/control-plane"
                   for x in rec.get("taints") or [])

    def pick(self, tolerate_cp, i=0):
        """Scheduler stand-in: a Ready, schedulable node, workers first."""
        cand = [r for r in self.nodes if self.ready(r["name"]) and not r.get("unschedulable")
                and (tolerate_cp or not self.cp(r))]
        cand.sort(key=lambda r: (self.cp(r), r["created"]))
        return cand[i % len(cand)] if cand else None

    def workload(self, kind, ns, name, created, selector=None, replicas=None):
        key = (kind, ns, name)
        self.workloads.setdefault(key, {"kind": kind, "namespace": ns, "name": name,
                                        "created": created, "selector": selector or {},
                                        "replicas": replicas, "pods": []})
        return key

    def pod_ip(self, rec, host_network):
        if rec is None:
            return None
        addr = (rec.get("report") or {}).get("address")
        if host_network or not rec.get("podCIDR"):
            return addr if host_network else None
        net = ipaddress.ip_network(rec["podCIDR"])
        k = self.ipnext.get(rec["name"], 2)
        self.ipnext[rec["name"]] = k + 1
        return str(net.network_address + k)

    def add(self, ns, name, rec, wl, created, state, containers=("main",), init=0,
            host_network=False, labels=None):
        if wl[0] == "Deployment" and "%s/%s" % (ns, name) in self.pinned:
            rec = self.pinned["%s/%s" % (ns, name)]
        created = max(created, rec["created"]) if rec else created
        node = rec["name"] if rec else None
        cstat, istat, phase, restarts = [], [], "Pending", 0
        image = "registry.k8s.io/pause:3.9"
        started = kl.rfc3339(created)
        if state == "Running":
            phase = "Running"
            istat = [{"name": "init-%d" % i, "ready": True, "restartCount": 0, "image": image,
                      "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
                     for i in range(init)]
            cstat = [{"name": c, "ready": True, "restartCount": 0, "image": image, "started": True,
                      "state": {"running": {"startedAt": started}}} for c in containers]
        elif state == "Completed":
            phase = "Succeeded"
            cstat = [{"name": c, "ready": False, "restartCount": 0, "image": image,
                      "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
                     for c in containers]
        elif state in ("CrashLoopBackOff", "Init:CrashLoopBackOff"):
            restarts, last = crashloop_restarts(self.t - created)
            crash = {"name": containers[0], "ready": False, "restartCount": restarts,
                     "image": image,
                     "state": {"waiting": {"reason": "CrashLoopBackOff", "message":
                                           "back-off restarting failed container"}},
                     "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                                  "finishedAt": kl.rfc3339(created + last)}}}
            if state.startswith("Init:"):
                istat = [crash]
                cstat = [{"name": c, "ready": False, "restartCount": 0, "image": image,
                          "state": {"waiting": {"reason": "PodInitializing"}}}
                         for c in containers]
            else:
                phase = "Running"
                cstat = [crash] + [{"name": c, "ready": True, "restartCount": 0, "image": image,
                                    "state": {"running": {"startedAt": started}}}
                                   for c in containers[1:]]
        elif state.startswith("Init:"):
            done = int(state.split(":")[1].split("/")[0])
            istat = [{"name": "init-%d" % i, "ready": i < done, "restartCount": 0,
                      "image": image,
                      "state": ({"terminated": {"exitCode": 0, "reason": "Completed"}}
                                if i < done else {"running": {"startedAt": started}}
                                if i == done else {"waiting": {"reason": "PodInitializing"}})}
                     for i in range(init)]
            cstat = [{"name": c, "ready": False, "restartCount": 0, "image": image,
                      "state": {"waiting": {"reason": "PodInitializing"}}} for c in containers]
        elif state == "ContainerCreating" and node:
            cstat = [{"name": c, "ready": False, "restartCount": 0, "image": image,
                      "state": {"waiting": {"reason": "ContainerCreating"}}} for c in containers]
        ready = phase == "Running" and all(c["ready"] for c in cstat)
        conds = [{"type": "PodScheduled", "status": "True" if node else "False"}]
        if not node:
            conds[0].update({"reason": "Unschedulable", "message": "0/%d nodes are available: "
                             "%d node(s) had untolerated taint(s)." % (len(self.nodes),
                                                                       len(self.nodes))})
        conds.append({"type": "Ready", "status": "True" if ready else "False"})
        owner_kind, owner_name = wl[0], wl[2]
        if owner_kind == "Deployment":
            owner_kind, owner_name = "ReplicaSet", name.rsplit("-", 1)[0]
        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": uid(ns + "/" + name),
                         "creationTimestamp": kl.rfc3339(created),
                         "labels": labels or {},
                         "ownerReferences": [{"kind": owner_kind, "name": owner_name,
                                              "controller": True}] if owner_kind else []},
            "spec": {"nodeName": node, "hostNetwork": host_network,
                     "containers": [{"name": c, "image": image} for c in containers],
                     "initContainers": [{"name": "init-%d" % i} for i in range(init)]},
            "status": {"phase": phase, "conditions": conds,
                       "hostIP": (rec.get("report") or {}).get("address") if rec else None,
                       "podIP": self.pod_ip(rec, host_network) if phase == "Running" else None,
                       "containerStatuses": cstat, "initContainerStatuses": istat,
                       "startTime": started},
        }
        if node is None:
            del pod["spec"]["nodeName"]
        self.items.append(pod)
        if wl in self.workloads:
            self.workloads[wl]["pods"].append(pod)

    def sorted_items(self):
        return sorted(self.items, key=lambda p: (p["metadata"]["namespace"],
                                                 p["metadata"]["name"]))

    def build(self):
        s, t = self.s, self.t
        created = s.get("createdAt", t)
        cluster_uid = s.get("clusterUID", "")
        master = next((r for r in self.nodes if self.cp(r)), None)
        if master:
            for comp in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"):
                self.add("kube-system", "%s-%s" % (comp, master["name"]), master,
                         ("Node", "kube-system", master["name"]), created, "Running",
                         containers=(comp,), host_network=True,
                         labels={"component": comp, "tier": "control-plane"})
        wl = self.workload("DaemonSet", "kube-system", "kube-proxy", created,
                           {"kubernetes.io/os": "linux"})
        for r in self.nodes:
            n = r["name"]
            st = "Running" if self.alive(n) else "ContainerCreating" if r.get("heartbeat") \
                else "Pending"
            self.add("kube-system", "kube-proxy-" + sfx("kube-proxy" + r["uid"]), r, wl,
                     r["created"], st, containers=("kube-proxy",), host_network=True,
                     labels={"k8s-app": "kube-proxy"})
        wl = self.workload("Deployment", "kube-system", "coredns", created,
                           {"kubernetes.io/os": "linux"}, 2)
        rs = sfx("coredns" + cluster_uid, 10)
        for i in range(2):
            node = self.pick(True, i)
            self.add("kube-system", "coredns-%s-%s" % (rs, sfx("coredns%d%s" % (i, cluster_uid))),
                     node, wl, created, "Running" if node else "Pending",
                     containers=("coredns",), labels={"k8s-app": "kube-dns"})
        for key, obj in sorted(s.get("objects", {}).items()):
            self.from_object(obj)
        rel = gpu_release(s)
        if rel:
            self.gpu_operator(rel)
        return self

    def from_object(self, o):
        body, kind, ns, name = o["body"], o["kind"], o["namespace"], o["name"]
        spec = body.get("spec") or {}
        tspec = (spec.get("template") or {}).get("spec") or {}
        containers = tuple(c.get("name", "c%d" % i) for i, c in
                           enumerate(tspec.get("containers") or [{}])) or ("main",)
        init = len(tspec.get("initContainers") or [])
        host_net = bool(tspec.get("hostNetwork"))
        labels = dict(((spec.get("template") or {}).get("metadata") or {}).get("labels") or {})
        tolerate_cp = any(x.get("operator") == "Exists" and not x.get("key") or
                          x.get("key") == "node-role.kubernetes.io/control-plane"
                          for x in tspec.get("tolerations") or [])
        if kind == "DaemonSet":
            wl = self.workload("DaemonSet", ns, name, o["created"], tspec.get("nodeSelector"))
            flannel, calico = is_flannel(o), is_calico(o)
            for r in self.nodes:
                if not flannel and self.cp(r) and not tolerate_cp:
                    continue
                n = r["name"]
                if flannel:
                    st = ("Running" if r.get("podCIDR") else "CrashLoopBackOff") \
                        if self.alive(n) else "Init:0/%d" % init if r.get("heartbeat") \
                        else "Pending"
                elif calico:
                    # calico-node runs in the host's network: it needs no CNI.
                    st = "Running" if self.alive(n) else "Init:0/%d" % init \
                        if r.get("heartbeat") else "Pending"
                else:
                    st = "Running" if self.ready(n) else "ContainerCreating"
                self.add(ns, "%s-%s" % (name, sfx(name + r["uid"])), r, wl, o["created"], st,
                         containers, init, host_net, labels)
        elif kind in ("Deployment", "StatefulSet", "ReplicaSet"):
            replicas = int(spec.get("replicas", 1) or 0)
            wl = self.workload("Deployment", ns, name, o["created"], tspec.get("nodeSelector"),
                               replicas)
            rs = sfx(name + o["hash"], 10)
            for i in range(replicas):
                node = self.pick(tolerate_cp, i)
                self.add(ns, "%s-%s-%s" % (name, rs, sfx("%s%d" % (name, i))), node, wl,
                         o["created"], "Running" if node else "Pending", containers, init,
                         host_net, labels)
        elif kind == "Pod" and gpu_request(spec):
            self.gpu_pod(o, spec, tolerate_cp)
        elif kind == "Pod":
            pspec = spec
            want = pspec.get("nodeName")
            node = next((r for r in self.nodes if r["name"] == want), None) if want \
                else self.pick(tolerate_cp)
            ok = node is not None and self.ready(node["name"])
            self.add(ns, name, node, (None, ns, None), o["created"],
                     "Running" if ok else "Pending",
                     tuple(c.get("name", "c") for c in pspec.get("containers") or [{}]),
                     labels=dict((o["body"].get("metadata") or {}).get("labels") or {}))

    def gpu_pod(self, o, spec, tolerate_cp):
        """A bare pod asking for nvidia.com/gpu: the scheduler places it on a
        node advertising enough GPUs; it runs to completion there (the lab
        runs no containers: a container running nvidia-smi logs that node's
        `nvidia-smi -L`, as the kubelet last saw it). Else it stays Pending
        with the scheduler's message."""
        ns, name, want = o["namespace"], o["name"], gpu_request(spec)
        containers = tuple(c.get("name", "c") for c in spec.get("containers") or [{}])
        labels = dict((o["body"].get("metadata") or {}).get("labels") or {})
        reasons, node = {}, None
        for r in self.nodes:
            if spec.get("nodeName") and r["name"] != spec["nodeName"]:
                continue
            gs = gpu_state(self.s, r, self.ready(r["name"]))
            if not self.ready(r["name"]):
                why = "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
            elif r.get("unschedulable"):
                why = "node(s) were unschedulable"
            elif self.cp(r) and not tolerate_cp:
                why = "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"
            elif not gs or gs["count"] < want:
                why = "Insufficient nvidia.com/gpu"
            else:
                node = r
                break
            reasons[why] = reasons.get(why, 0) + 1
        if node is None:
            self.add(ns, name, None, (None, ns, None), o["created"], "Pending", containers,
                     labels=labels)
            total = len(self.nodes)
            hist = sorted("%d %s" % (n, why) for why, n in reasons.items())
            victims = {}
            for why, n in reasons.items():
                key = "No preemption victims found for incoming pod" \
                    if why.startswith("Insufficient") else "Preemption is not helpful for scheduling"
                victims[key] = victims.get(key, 0) + n
            pre = sorted("%d %s" % (n, why) for why, n in victims.items())
            self.items[-1]["status"]["conditions"][0]["message"] = (
                "0/%d nodes are available: %s. preemption: 0/%d nodes are available: %s." %
                (total, ", ".join(hist), total, ", ".join(pre)))
            return
        self.add(ns, name, node, (None, ns, None), o["created"], "Completed", containers,
                 labels=labels)
        self.items[-1]["spec"]["containers"][0]["resources"] = {
            "limits": {"nvidia.com/gpu": str(want)}}
        runs_smi = any("nvidia-smi" in " ".join(str(w) for w in (c.get("command") or []) +
                                                (c.get("args") or []))
                       for c in spec.get("containers") or [])
        listing = ((node.get("report") or {}).get("devices") or {}).get("listing") or ""
        # A container gets the GPUs it asked for, renumbered from 0.
        lines = [ln for ln in listing.splitlines() if ln.startswith("GPU ")][:want]
        self.logs[(ns, name)] = "".join(
            re.sub(r"^GPU \d+:", "GPU %d:" % i, ln) + "\n" for i, ln in enumerate(lines)) \
            if runs_smi else ""

    def gpu_operator(self, rel):
        ns, rname, t0 = rel["namespace"], rel["name"], rel["firstDeployed"]
        wl = self.workload("Deployment", ns, "gpu-operator", t0, None, 1)
        node = self.pick(True)
        self.add(ns, "gpu-operator-%s-%s" % (sfx("gpuop" + rname, 10), sfx("gpuop0" + rname)),
                 node, wl, t0, "Running" if node else "Pending", ("gpu-operator",),
                 labels={"app": "gpu-operator"})
        nfd = "%s-node-feature-discovery" % rname
        for part in ("master", "gc"):
            wl = self.workload("Deployment", ns, "%s-%s" % (nfd, part), t0, None, 1)
            node = self.pick(True)
            self.add(ns, "%s-%s-%s-%s" % (nfd, part, sfx(part + rname, 10), sfx(part + "0")),
                     node, wl, t0, "Running" if node else "Pending", (part,),
                     labels={"app.kubernetes.io/name": "node-feature-discovery", "role": part})
        wl = self.workload("DaemonSet", ns, nfd + "-worker", t0)
        for r in self.nodes:
            self.add(ns, "%s-worker-%s" % (nfd, sfx("nfdw" + r["uid"])), r, wl, t0,
                     "Running" if self.ready(r["name"]) else "Pending", ("worker",),
                     labels={"app.kubernetes.io/name": "node-feature-discovery", "role": "worker"})
        operands = (
            ("nvidia-driver-daemonset", "driver"),
            ("nvidia-container-toolkit-daemonset", "container-toolkit"),
            ("nvidia-device-plugin-daemonset", "device-plugin"),
            ("gpu-feature-discovery", "gpu-feature-discovery"),
            ("nvidia-dcgm-exporter", "dcgm-exporter"),
            ("nvidia-operator-validator", "operator-validator"),
        )
        gpu_nodes = []
        for r in self.nodes:
            gs = gpu_state(self.s, r, self.ready(r["name"]))
            if gs:
                gpu_nodes.append((r, gs))
        for dsname, comp in operands:
            if not gpu_nodes:
                break
            gs0 = gpu_nodes[0][1]
            if comp == "driver" and not gs0["driverContainer"] or \
                    comp == "container-toolkit" and not gs0["toolkit"] or \
                    comp == "dcgm-exporter" and not gs0["dcgm"]:
                continue
            wl = self.workload("DaemonSet", ns, dsname, t0,
                               {"nvidia.com/gpu.deploy." + comp: "true"})
            for r, gs in gpu_nodes:
                if not self.ready(r["name"]):
                    st, init = "Pending", 1
                elif comp == "driver":
                    # The lab cannot load kernel modules from a driver container.
                    st, init = "CrashLoopBackOff", 1
                elif comp == "container-toolkit":
                    st, init = ("Running" if gs["devOk"] and not gs["driverContainer"]
                                else "Init:0/1"), 1
                elif comp == "operator-validator":
                    st, init = ("Running" if gs["running"] else "Init:0/4"), 4
                else:
                    st, init = ("Running" if gs["running"] else "Init:0/1"), 1
                self.add(ns, "%s-%s" % (dsname, sfx(dsname + r["uid"])), r, wl, t0, st,
                         (comp,), init, comp == "driver", {"app": dsname})
        for r, gs in gpu_nodes:
            if gs["running"]:
                self.add(ns, "nvidia-cuda-validator-%s" % sfx("cudaval" + r["uid"]), r,
                         (None, ns, None), t0, "Completed", ("nvidia-cuda-validator",), 1,
                         labels={"app": "nvidia-cuda-validator"})


def gpu_request(spec):
    """GPUs a pod spec asks for (limits, else requests, summed over containers)."""
    total = 0
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        value = (res.get("limits") or {}).get("nvidia.com/gpu") or \
            (res.get("requests") or {}).get("nvidia.com/gpu") or 0
        try:
            total += int(value)
        except (TypeError, ValueError):
            pass
    return total


def pod_log(s, t, ns, name):
    pods = Pods(s, t).build()
    p = next((p for p in pods.items if p["metadata"]["namespace"] == ns and
              p["metadata"]["name"] == name), None)
    if p is None:
        raise Http(404, "NotFound", "pods \"%s\" not found" % name)
    if (ns, name) in pods.logs or p["status"]["phase"] == "Running":
        return 200, pods.logs.get((ns, name), "")
    c = p["spec"]["containers"][0]["name"]
    raise Http(400, "BadRequest", "container \"%s\" in pod \"%s\" is waiting to start: "
               "ContainerCreating" % (c, name))


def is_flannel(o):
    if o["kind"] != "DaemonSet":
        return False
    if "flannel" in o["name"]:
        return True
    tspec = ((o["body"].get("spec") or {}).get("template") or {}).get("spec") or {}
    return any("flannel" in str(c.get("image", "")) for c in tspec.get("containers") or [])


def flannel_config(s):
    """(cni conflist text, net-conf dict) from the applied flannel objects, or None."""
    objs = s.get("objects", {}).values()
    ds = next((o for o in objs if is_flannel(o)), None)
    if not ds:
        return None
    cni, net = None, {}
    for o in objs:
        if o["kind"] == "ConfigMap" and o["namespace"] == ds["namespace"]:
            data = o["body"].get("data") or {}
            if "cni-conf.json" in data:
                cni = data["cni-conf.json"]
                try:
                    net = json.loads(data.get("net-conf.json") or "{}")
                except ValueError:
                    net = {}
    if not cni:
        cni = json.dumps({"name": "cbr0", "cniVersion": "0.3.1", "plugins": [
            {"type": "flannel", "delegate": {"hairpinMode": True, "isDefaultGateway": True}},
            {"type": "portmap", "capabilities": {"portMappings": True}}]}, indent=2) + "\n"
    return cni, net


def is_calico(o):
    if o["kind"] != "DaemonSet":
        return False
    if o["name"] == "calico-node":
        return True
    tspec = ((o["body"].get("spec") or {}).get("template") or {}).get("spec") or {}
    return any("calico/node" in str(c.get("image", "")) for c in tspec.get("containers") or [])


CALICO_KUBECONFIG = "/etc/cni/net.d/calico-kubeconfig"
CALICO_POOL = "default-ipv4-ippool"


def calico_config(s, node):
    """The 10-calico.conflist install-cni writes on `node` (calico-config's
    cni_network_config, placeholders filled), or None without calico-node."""
    objs = s.get("objects", {}).values()
    ds = next((o for o in objs if is_calico(o)), None)
    if not ds:
        return None
    cm = next((o for o in objs if o["kind"] == "ConfigMap" and o["name"] == "calico-config"
               and o["namespace"] == ds["namespace"]), None)
    data = (cm["body"].get("data") or {}) if cm else {}
    text = data.get("cni_network_config") or ""
    mtu = data.get("veth_mtu") or "0"
    # veth_mtu 0: calico-node's autodetection, the host's 1500 less IP-in-IP's 20.
    text = text.replace("__KUBERNETES_NODE_NAME__", node) \
        .replace("__CNI_MTU__", "1480" if mtu == "0" else mtu) \
        .replace("__KUBECONFIG_FILEPATH__", CALICO_KUBECONFIG)
    return text + "\n"


def calico_pool_cidr(s):
    """The CIDR calico-node gives the default pool it creates: its
    CALICO_IPV4POOL_CIDR, else the podSubnet kubeadm was given, else
    Calico's own default."""
    ds = next((o for o in s.get("objects", {}).values() if is_calico(o)), None)
    tspec = ((ds["body"].get("spec") or {}).get("template") or {}).get("spec") or {} \
        if ds else {}
    for c in tspec.get("containers") or []:
        for e in c.get("env") or []:
            if e.get("name") == "CALICO_IPV4POOL_CIDR" and e.get("value"):
                return str(e["value"])
    return s.get("podCIDR") or "192.168.0.0/16"


def calico_start(s, t):
    """calico-node's first start anywhere: the default IPv4 pool, made once
    and never changed by a later manifest (as Calico documents)."""
    pools = s.setdefault("calicoPools", {})
    if CALICO_POOL not in pools:
        pools[CALICO_POOL] = {"cidr": calico_pool_cidr(s), "created": t}


def ippool_view(name, p):
    return {"apiVersion": "crd.projectcalico.org/v1", "kind": "IPPool",
            "metadata": {"name": name, "uid": uid("ippool/" + name),
                         "creationTimestamp": kl.rfc3339(p["created"]), "generation": 1},
            "spec": {"allowedUses": ["Workload", "Tunnel"], "blockSize": 26,
                     "cidr": p["cidr"], "ipipMode": "Always", "natOutgoing": True,
                     "nodeSelector": "all()", "vxlanMode": "Never"}}


def calico_route(s, method, parts):
    """GET /apis/crd.projectcalico.org/v1/ippools[/NAME], served once the
    IPPool CRD is applied."""
    crd = any(o["kind"] == "CustomResourceDefinition" and o["name"] ==
              "ippools.crd.projectcalico.org" for o in s.get("objects", {}).values())
    if method != "GET" or not crd or not parts or parts[0] != "ippools" or len(parts) > 2:
        raise Http(404, "NotFound", "the server could not find the requested resource")
    pools = s.get("calicoPools") or {}
    if len(parts) == 2:
        if parts[1] not in pools:
            raise Http(404, "NotFound", "ippools.crd.projectcalico.org \"%s\" not found"
                       % parts[1])
        return 200, ippool_view(parts[1], pools[parts[1]])
    return 200, lst("IPPool", [ippool_view(n, p) for n, p in sorted(pools.items())], s,
                    "crd.projectcalico.org/v1")


def daemonset_view(wl, t):
    pods = wl["pods"]
    ready = sum(1 for p in pods if all(c.get("ready") for c in p["status"]["containerStatuses"])
                and p["status"]["phase"] == "Running")
    sched = sum(1 for p in pods if p["spec"].get("nodeName"))
    md = {"name": wl["name"], "namespace": wl["namespace"], "uid": uid(str(wl["name"]) +
                                                                        wl["namespace"]),
          "creationTimestamp": kl.rfc3339(wl["created"]), "generation": 1}
    tmpl = {"spec": {"nodeSelector": wl["selector"]} if wl["selector"] else {}}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": md,
            "spec": {"template": tmpl},
            "status": {"currentNumberScheduled": sched, "desiredNumberScheduled": len(pods),
                       "numberAvailable": ready, "numberReady": ready,
                       "numberMisscheduled": 0, "updatedNumberScheduled": sched,
                       "observedGeneration": 1}}


def lst(kind, items, s, api="v1"):
    return {"apiVersion": api, "kind": kind + "List",
            "metadata": {"resourceVersion": str(s.get("resourceVersion", 1000))}, "items": items}


# ------------------------------------------------------------------ handlers

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "gpuctl-lab-apiserver/1"

    def log_message(self, fmt, *args):
        if os.environ.get("GPUCTL_APISERVER_VERBOSE"):
            sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    def _reply(self, code, obj):
        if isinstance(obj, str):
            body, ctype = obj.encode(), "text/plain; charset=utf-8"
        else:
            body, ctype = json.dumps(obj).encode(), "application/json"
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self, method):
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/") if p]
        query = dict(urllib.parse.parse_qsl(url.query))
        body = None
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            try:
                body = json.loads(self.rfile.read(n))
            except ValueError:
                self._reply(400, status(400, "BadRequest", "invalid JSON body"))
                return
        try:
            with LOCK:
                code, obj = route(self, method, parts, query, body)
        except Http as e:
            code, obj = e.code, status(e.code, e.reason, e.message)
        except Exception as e:  # noqa: BLE001 - a server must answer, not die
            code, obj = 500, status(500, "InternalError", "%s: %s" % (type(e).__name__, e))
        self._reply(code, obj)

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PATCH(self):
        self._handle("PATCH")

    def do_DELETE(self):
        self._handle("DELETE")


def principal(h, s):
    """Who is calling: admin / node credential, bootstrap token, or anonymous."""
    ca = h.headers.get("X-Gpuctl-Lab-Ca")
    if ca and s.get("caPin") and ca != s["caPin"]:
        raise Http(495, "Unauthorized", "x509: certificate signed by unknown authority")
    fp = h.headers.get("X-Gpuctl-Lab-Cert")
    if fp:
        cred = (s.get("credentials") or {}).get(fp)
        if not cred:
            raise Http(401, "Unauthorized", "Unauthorized")
        return cred
    auth = h.headers.get("Authorization", "")
    if auth.startswith("Bearer "):
        tok = valid_token(s, auth[7:].strip())
        if not tok:
            raise Http(401, "Unauthorized", "Unauthorized")
        return {"user": "system:bootstrap:" + tok["id"], "bootstrap": True}
    return {"user": "system:anonymous", "anonymous": True}


def valid_token(s, text):
    tid, _, secret = text.partition(".")
    tok = (s.get("tokens") or {}).get(tid)
    if not tok or not hmac.compare_digest(tok["secret"], secret):
        return None
    if tok.get("expires") and tok["expires"] < time.time():
        return None
    return tok


def prune_tokens(s):
    t = time.time()
    for tid in [k for k, v in (s.get("tokens") or {}).items()
                if v.get("expires") and v["expires"] < t]:
        del s["tokens"][tid]


def need_admin(who):
    if who.get("anonymous") or who.get("bootstrap"):
        raise Http(403 if who.get("bootstrap") else 401, "Forbidden" if who.get("bootstrap")
                   else "Unauthorized", "Unauthorized" if not who.get("bootstrap") else
                   "forbidden: User \"%s\" cannot perform this action" % who["user"])
    if who.get("node"):
        raise Http(403, "Forbidden", "forbidden: User \"%s\" cannot perform this action"
                   % who["user"])


def route(h, method, parts, query, body):
    s = STORE.s
    t = time.time()
    path = "/".join(parts)
    if method == "GET" and path in ("healthz", "livez", "readyz"):
        return 200, "ok"
    if method == "GET" and path == "version":
        return 200, kl.version_info((s.get("version") or "v" + kl.DEFAULT_VERSION)[1:])
    if path == "gpuctl-lab/v1/init" and method == "POST":
        return do_init(s, body or {}, t)
    if not s.get("initialized"):
        raise Http(503, "ServiceUnavailable", "the cluster has not been initialised "
                   "(run kubeadm init)")
    prune_tokens(s)
    if method == "GET" and path == "api/v1/namespaces/kube-public/configmaps/cluster-info":
        return 200, cluster_info(s)
    who = principal(h, s)
    if path == "gpuctl-lab/v1/join" and method == "POST":
        if not who.get("bootstrap"):
            raise Http(401, "Unauthorized", "Unauthorized")
        return do_join(s, h.headers["Authorization"][7:].split(".")[0], body or {}, t)
    if who.get("anonymous"):
        raise Http(401, "Unauthorized", "Unauthorized")
    if path == "gpuctl-lab/v1/heartbeat" and method == "POST":
        return do_heartbeat(s, who, body or {}, t)
    # Node credentials may read nodes; everything else is for admins.
    if not (method == "GET" and parts[:2] == ["api", "v1"] and parts[2:3] == ["nodes"]):
        need_admin(who)
    if parts[:2] == ["gpuctl-lab", "v1"]:
        return lab_route(s, method, parts[2:], body or {}, t)
    if parts[:2] == ["api", "v1"]:
        return core_route(s, method, parts[2:], body or {}, t)
    if parts[:3] == ["apis", "apps", "v1"]:
        return apps_route(s, method, parts[3:], t)
    if parts[:3] == ["apis", "crd.projectcalico.org", "v1"]:
        return calico_route(s, method, parts[3:])
    raise Http(404, "NotFound", "the server could not find the requested resource")


def do_init(s, b, t):
    if s.get("initialized"):
        raise Http(409, "AlreadyExists", "the cluster is already initialised")
    s.clear()
    s.update({
        "initialized": True, "createdAt": t, "clusterUID": str(uuid.uuid4()),
        "version": b["version"], "podCIDR": b.get("podCIDR"),
        "serviceCIDR": b.get("serviceCIDR", "10.96.0.0/12"), "endpoint": b["endpoint"],
        "advertiseAddress": b["advertiseAddress"], "caPin": kl.ca_pin(b["caCert"]),
        "credentials": b.get("credentials") or {}, "tokens": {}, "nodes": {},
        "namespaces": {}, "objects": {}, "releases": {},
    })
    pki = os.path.join(STORE.dir, "pki")
    kl.write_file(os.path.join(pki, "ca.crt"), b["caCert"])
    kl.write_file(os.path.join(pki, "ca.key"), b.get("caKey", ""), 0o600)
    for ns in SYSTEM_NAMESPACES:
        s["namespaces"][ns] = {"created": t}
    s["clusterInfo"] = cluster_info_kubeconfig(b["endpoint"], b["caCert"])
    if b.get("token"):
        add_token(s, b["token"], t)
    node = b.get("node")
    if node:
        rec = register(s, node["name"], node.get("report"), t)
        rec["labels"]["node-role.kubernetes.io/control-plane"] = ""
        rec["labels"]["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
        rec["taints"] = [{"key": "node-role.kubernetes.io/control-plane",
                          "effect": "NoSchedule"}]
    STORE.save()
    return 201, {"ok": True}


def cluster_info_kubeconfig(endpoint, ca_pem):
    return ("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: %s\n"
            "    server: https://%s\n  name: \"\"\ncontexts: null\ncurrent-context: \"\"\n"
            "kind: Config\npreferences: {}\nusers: null\n" % (kl.b64(ca_pem), endpoint))


def cluster_info(s):
    kc = s["clusterInfo"]
    data = {"kubeconfig": kc}
    payload = kl.b64url(kc.encode())
    for tid, tok in sorted(s["tokens"].items()):
        if "signing" not in tok.get("usages", []):
            continue
        header = kl.b64url(json.dumps({"alg": "HS256", "kid": tid},
                                      separators=(",", ":")).encode())
        sig = hmac.new(tok["secret"].encode(), (header + "." + payload).encode(),
                       hashlib.sha256).digest()
        data["jws-kubeconfig-" + tid] = header + ".." + kl.b64url(sig)
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cluster-info", "namespace": "kube-public",
                         "creationTimestamp": kl.rfc3339(s["createdAt"])},
            "data": data}


def add_token(s, tok, t):
    tid = tok["id"]
    if tid in s["tokens"]:
        raise Http(409, "AlreadyExists", "secrets \"bootstrap-token-%s\" already exists" % tid)
    ttl = float(tok.get("ttl", 86400))
    s["tokens"][tid] = {
        "id": tid, "secret": tok["secret"], "created": t,
        "expires": t + ttl if ttl > 0 else None,
        "usages": tok.get("usages") or ["authentication", "signing"],
        "groups": tok.get("groups") or ["system:bootstrappers:kubeadm:default-node-token"],
        "description": tok.get("description", ""),
    }


def alloc_cidr(s, name):
    if not s.get("podCIDR"):
        return None
    try:
        net = ipaddress.ip_network(s["podCIDR"], strict=False)
    except ValueError:
        return None
    size = 24 if net.version == 4 else 64
    if net.prefixlen > size:
        return None
    used = {r.get("podCIDR") for n, r in s["nodes"].items() if n != name}
    for sub in net.subnets(new_prefix=size):
        if str(sub) not in used:
            return str(sub)
    return None


def register(s, name, report, t):
    rec = s["nodes"].get(name)
    if rec is None:
        rec = s["nodes"][name] = {
            "name": name, "uid": str(uuid.uuid4()), "created": t,
            "labels": {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
                       "kubernetes.io/os": "linux"},
            "annotations": {
                "kubeadm.alpha.kubernetes.io/cri-socket":
                    "unix:///var/run/containerd/containerd.sock",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "taints": [],
        }
        rec["podCIDR"] = alloc_cidr(s, name)
    if report:
        rec["report"] = report
        rec["heartbeat"] = t
    return rec


def do_join(s, tid, b, t):
    name = b.get("node", "")
    if not name:
        raise Http(400, "BadRequest", "node name missing")
    rec = s["nodes"].get(name)
    if rec and node_health(rec, t)[2] == "True":
        raise Http(409, "AlreadyExists", "a Node with name \"%s\" and status \"Ready\" already "
                   "exists in the cluster. You must delete the existing Node or change the name "
                   "of this new joining Node" % name)
    pki = os.path.join(STORE.dir, "pki")
    cert = kl.sign_csr(b.get("csr", ""), os.path.join(pki, "ca.crt"),
                       os.path.join(pki, "ca.key"))
    s["credentials"][kl.cert_fingerprint(cert)] = {
        "user": "system:node:" + name, "groups": ["system:nodes"], "node": name}
    rec = register(s, name, b.get("report"), t)
    rec["joinedWith"] = tid
    STORE.save()
    return 201, {"cert": cert, "podCIDR": rec.get("podCIDR")}


def do_heartbeat(s, who, b, t):
    name = who.get("node")
    if not name:
        raise Http(403, "Forbidden", "only kubelets post node status")
    rec = s["nodes"].get(name)
    if rec is None and not b.get("register"):
        raise Http(404, "NotFound", "nodes \"%s\" not found" % name)
    rec = register(s, name, b.get("report"), t)
    STORE.save()
    out = {"node": name, "podCIDR": rec.get("podCIDR"),
           "devicePlugin": gpu_release(s) is not None and
           int((rec.get("report") or {}).get("pciGpus") or 0) > 0}
    fc = flannel_config(s)
    if fc:
        cni, net = fc
        out["cni"] = {"10-flannel.conflist": cni}
        out["cniPlugins"] = ["flannel"]
        if rec.get("podCIDR"):
            sub = ipaddress.ip_network(rec["podCIDR"])
            out["flannelSubnetEnv"] = (
                "FLANNEL_NETWORK=%s\nFLANNEL_SUBNET=%s/%d\nFLANNEL_MTU=1450\n"
                "FLANNEL_IPMASQ=true\n" % (net.get("Network", s.get("podCIDR")),
                                           sub.network_address + 1, sub.prefixlen))
            rec["flannel"] = {
                "flannel.alpha.coreos.com/backend-type": "vxlan",
                "flannel.alpha.coreos.com/kube-subnet-manager": "true",
                "flannel.alpha.coreos.com/public-ip": (rec.get("report") or {}).get("address",
                                                                                     "")}
    calico = calico_config(s, name)
    if calico:
        out["cni"] = dict(out.get("cni") or {}, **{"10-calico.conflist": calico})
        out["cniPlugins"] = sorted(set(out.get("cniPlugins") or []) | {"calico", "calico-ipam"})
        if "calicoPools" not in s or CALICO_POOL not in s["calicoPools"]:
            calico_start(s, t)
            STORE.save()
    return 200, out


def lab_route(s, method, parts, b, t):
    if parts == ["tokens"] and method == "GET":
        return 200, {"tokens": sorted(s["tokens"].values(), key=lambda x: x["created"])}
    if parts == ["tokens"] and method == "POST":
        add_token(s, b, t)
        STORE.save()
        return 201, s["tokens"][b["id"]]
    if parts == ["apply"] and method == "POST":
        return 200, do_apply(s, b.get("objects") or [], b.get("namespace") or "default",
                             bool(b.get("delete")), t)
    if parts == ["upgrade"] and method == "POST":
        # kubeadm upgrade apply: the control plane now runs this version.
        s["version"] = b["version"]
        STORE.save()
        return 200, kl.version_info(s["version"][1:])
    if parts == ["releases"] and method == "GET":
        return 200, {"releases": sorted(s["releases"].values(),
                                        key=lambda r: (r["namespace"], r["name"]))}
    if parts == ["releases"] and method == "POST":
        return do_release(s, b, t)
    if parts[:1] == ["releases"] and len(parts) == 3:
        key = parts[1] + "/" + parts[2]
        rel = s["releases"].get(key)
        if rel is None:
            raise Http(404, "NotFound", "release: not found")
        if method == "PATCH":
            for k in ("status", "description"):
                if k in b:
                    rel[k] = b[k]
            STORE.save()
            return 200, rel
        return 200, rel
    raise Http(404, "NotFound", "the server could not find the requested resource")


def do_release(s, b, t):
    ns, name, mode = b["namespace"], b["name"], b.get("mode", "install")
    if ns not in s["namespaces"]:
        raise Http(404, "NotFound", "namespaces \"%s\" not found" % ns)
    key = ns + "/" + name
    old = s["releases"].get(key)
    if mode == "install" and old:
        raise Http(409, "AlreadyExists", "cannot re-use a name that is still in use")
    if mode == "upgrade" and not old:
        raise Http(404, "NotFound", "\"%s\" has no deployed releases" % name)
    rel = {
        "name": name, "namespace": ns, "chart": b["chart"], "chartName": b["chartName"],
        "chartVersion": b["chartVersion"], "appVersion": b.get("appVersion", ""),
        "values": b.get("values") or {}, "status": "deployed",
        "revision": (old["revision"] + 1) if old else 1,
        "firstDeployed": old["firstDeployed"] if old else t, "updated": t,
        "description": "Upgrade complete" if old else "Install complete",
    }
    s["releases"][key] = rel
    STORE.save()
    return 201, rel


def do_apply(s, objs, default_ns, delete, t):
    """kubectl apply -f (or, with delete, kubectl delete pod): one result per object."""
    results = [None] * len(objs)
    changed = False
    for idx in range(len(objs)):
        o = objs[idx]
        kind = o.get("kind", "")
        api = o.get("apiVersion", "")
        md = o.get("metadata") or {}
        name = md.get("name", "")
        group = api.split("/")[0] if "/" in api else ""
        ref = kind.lower() + ("." + group if group else "")
        res = {"ref": "%s/%s" % (ref, name), "kind": kind, "name": name,
               "resource": (kind.lower() + "s" if not kind.endswith("s") else kind.lower() +
                            "es") + ("." + group if group else "")}
        if kind == "Namespace" and not delete:
            res["action"] = "unchanged" if name in s["namespaces"] else "created"
            s["namespaces"].setdefault(name, {"created": t})
            changed = True
            results[idx] = res
            continue
        ns = None if kind in CLUSTER_SCOPED else (md.get("namespace") or default_ns)
        key = "%s/%s/%s/%s" % (group, kind, ns or "", name)
        if ns and ns not in s["namespaces"] and not delete:
            res["error"] = ("NotFound", "namespaces \"%s\" not found" % ns)
            results[idx] = res
            continue
        if delete:
            if key in s["objects"]:
                del s["objects"][key]
                res["action"] = "deleted"
                changed = True
            else:
                res["error"] = ("NotFound", "%s \"%s\" not found" % (res["resource"], name))
            results[idx] = res
            continue
        digest = hashlib.sha256(json.dumps(o, sort_keys=True).encode()).hexdigest()
        old = s["objects"].get(key)
        if old and old["hash"] == digest:
            res["action"] = "unchanged"
        else:
            res["action"] = "configured" if old else "created"
            s["objects"][key] = {"kind": kind, "apiVersion": api, "group": group, "name": name,
                                 "namespace": ns, "hash": digest, "body": o,
                                 "created": old["created"] if old else t}
            changed = True
        results[idx] = res
    if changed:
        STORE.save()
    return {"results": results}


def delete_node(s, name, t):
    """kubectl delete node: the Node object goes, and with it every pod bound
    to it (the pod garbage collector's work). The node's credentials stay
    valid, as a real kubelet's client certificate does: a kubelet that
    registers again (on its next start) brings the node back."""
    rec = s["nodes"].get(name)
    if rec is None:
        raise Http(404, "NotFound", "nodes \"%s\" not found" % name)
    view = node_view(s, rec, t)
    del s["nodes"][name]
    STORE.save()
    return 200, view


def patch_node(s, name, b, t):
    """kubectl cordon / uncordon: a merge patch of spec.unschedulable."""
    rec = s["nodes"].get(name)
    if rec is None:
        raise Http(404, "NotFound", "nodes \"%s\" not found" % name)
    spec = b.get("spec") or {}
    if "unschedulable" in spec:
        if spec["unschedulable"] and not rec.get("unschedulable"):
            rec["pinned"] = [
                "%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])
                for p in Pods(s, t).build().items
                if p["spec"].get("nodeName") == name and
                any(o["kind"] == "ReplicaSet" for o in p["metadata"]["ownerReferences"])]
            rec["unschedulable"] = t  # when it was cordoned, for the taint
        elif not spec["unschedulable"]:
            rec.pop("unschedulable", None)
            rec.pop("pinned", None)
        STORE.save()
    return 200, node_view(s, rec, t)


def evict(s, ns, name, t):
    """The eviction API. The lab's pods are what the cluster's state implies:
    a controller's pod leaves the cordoned node it was kept on, and the
    scheduler stand-in places it on another; a bare pod object goes away. The lab has no PodDisruptionBudgets, so no
    eviction is refused (docs/standins-kubernetes.md)."""
    if not any(p["metadata"]["namespace"] == ns and p["metadata"]["name"] == name
               for p in Pods(s, t).build().items):
        raise Http(404, "NotFound", "pods \"%s\" not found" % name)
    ref = "%s/%s" % (ns, name)
    for rec in s["nodes"].values():
        if ref in (rec.get("pinned") or []):
            rec["pinned"].remove(ref)  # evicted: the scheduler places it anew
            STORE.save()
    do_apply(s, [{"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": name, "namespace": ns}}], ns, True, t)
    return 201, {"kind": "Status", "apiVersion": "v1", "status": "Success"}


def core_route(s, method, parts, b, t):
    if len(parts) == 2 and parts[0] == "nodes" and method == "PATCH":
        return patch_node(s, parts[1], b, t)
    if len(parts) == 2 and parts[0] == "nodes" and method == "DELETE":
        return delete_node(s, parts[1], t)
    if (len(parts) == 5 and parts[0] == "namespaces" and parts[2] == "pods"
            and parts[4] == "eviction" and method == "POST"):
        return evict(s, parts[1], parts[3], t)
    if parts == ["nodes"] and method == "GET":
        return 200, lst("Node", [node_view(s, r, t) for r in
                                 sorted(s["nodes"].values(), key=lambda r: r["name"])], s)
    if parts[:1] == ["namespaces"]:
        if len(parts) == 1 and method == "GET":
            return 200, lst("Namespace", [ns_view(n, v) for n, v in
                                          sorted(s["namespaces"].items())], s)
        if len(parts) == 1 and method == "POST":  # helm --create-namespace
            name = (b.get("metadata") or {}).get("name", "")
            if name in s["namespaces"]:
                raise Http(409, "AlreadyExists", "namespaces \"%s\" already exists" % name)
            s["namespaces"][name] = {"created": t}
            STORE.save()
            return 201, ns_view(name, s["namespaces"][name])
        if len(parts) == 5 and parts[2] == "pods" and parts[4] == "log" and method == "GET":
            return pod_log(s, t, parts[1], parts[3])
        if len(parts) == 3 and parts[2] == "pods" and method == "GET":
            pods = [p for p in Pods(s, t).build().sorted_items()
                    if p["metadata"]["namespace"] == parts[1]]
            return 200, lst("Pod", pods, s)
    if parts == ["pods"] and method == "GET":
        return 200, lst("Pod", Pods(s, t).build().sorted_items(), s)
    if method == "GET" and (parts == ["configmaps"] or (
            parts[:1] == ["namespaces"] and parts[2:] == ["configmaps"])):
        return 200, lst("ConfigMap", configmaps(s, parts[1] if len(parts) > 2 else None), s)
    raise Http(404, "NotFound", "the server could not find the requested resource")


def configmaps(s, ns):
    """The ConfigMaps applied with kubectl (flannel's net-conf.json), as stored."""
    items = []
    for o in sorted(s["objects"].values(), key=lambda o: (o["namespace"] or "", o["name"])):
        if o["kind"] != "ConfigMap" or (ns is not None and o["namespace"] != ns):
            continue
        body = o["body"]
        md = {k: v for k, v in (body.get("metadata") or {}).items()
              if k not in ("creationTimestamp", "resourceVersion", "uid")}
        md.update({"name": o["name"], "namespace": o["namespace"],
                   "creationTimestamp": kl.rfc3339(o["created"]),
                   "uid": uid("cm/" + o["namespace"] + "/" + o["name"]),
                   "resourceVersion": str(s.get("resourceVersion", 1000))})
        items.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": md,
                      "data": body.get("data") or {}})
    return items


def ns_view(name, v):
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "creationTimestamp": kl.rfc3339(v["created"]),
                         "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


def apps_route(s, method, parts, t):
    """GET /apis/apps/v1/[namespaces/NS/]daemonsets: the list kubectl filters."""
    ns = None
    if parts[:1] == ["namespaces"] and len(parts) >= 3:
        ns, parts = parts[1], parts[2:]
    if method != "GET" or parts != ["daemonsets"]:
        raise Http(404, "NotFound", "the server could not find the requested resource")
    p = Pods(s, t).build()
    items = [daemonset_view(w, t) for k, w in sorted(p.workloads.items())
             if w["kind"] == "DaemonSet" and (ns is None or w["namespace"] == ns)]
    return 200, lst("DaemonSet", items, s, "apps/v1")


def main():
    global STORE
    ap = argparse.ArgumentParser(description="gpuctl lab stand-in Kubernetes API server")
    ap.add_argument("--bind", default=os.environ.get("GPUCTL_APISERVER_BIND", "0.0.0.0"))
    ap.add_argument("--port", type=int, default=int(os.environ.get("GPUCTL_APISERVER_PORT",
                                                                   "6443")))
    ap.add_argument("--state-dir", default=os.environ.get(
        "GPUCTL_APISERVER_STATE_DIR", kl.rpath("/var/lib/gpuctl-lab/apiserver")))
    ap.add_argument("--port-file", help="write the bound port here (for --port 0)")
    a = ap.parse_args()
    STORE = Store(a.state_dir)
    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    srv = ThreadingHTTPServer((a.bind, a.port), Handler)
    port = srv.server_address[1]
    if a.port_file:
        kl.write_file(a.port_file, "%d\n" % port)
    sys.stderr.write("gpuctl-lab-apiserver: serving plain HTTP on %s:%d, state %s\n"
                     % (a.bind, port, STORE.path))
    sys.stderr.flush()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
