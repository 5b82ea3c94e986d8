#!/usr/bin/env python3
"""kubectl stand-in for the gpuctl lab: talks to the stand-in API server and
prints what the real kubectl prints, for what gpuctl's steps and the lab's
tests call (docs/standins-kubernetes.md, "kubectl"):

  get (nodes, pods, daemonsets, configmaps, Calico's ippools; -o
  wide|json|yaml|name|jsonpath=...;
  -n; -A; --no-headers; --raw), describe node, apply -f (files, -, URLs;
  --dry-run=client -o yaml), delete pod, logs, wait --for=condition=...,
  version --client, cluster-info, config view, cordon, uncordon, drain
  (--ignore-daemonsets, --delete-emptydir-data, --force, --timeout).
"""
import calendar
import json
import os
import re
import signal
import sys
import time

import jsonpath
import kubelib as kl

KUSTOMIZE = {31: "v5.4.2"}
RESOURCES = {
    "nodes": ("node", "nodes", "no"),
    "pods": ("pod", "pods", "po"),
    "daemonsets": ("daemonset", "daemonsets", "ds", "daemonset.apps", "daemonsets.apps"),
    "configmaps": ("configmap", "configmaps", "cm"),
    "ippools": ("ippool", "ippools", "ippool.crd.projectcalico.org",
                "ippools.crd.projectcalico.org"),
}
SINGULAR = {"nodes": "node", "pods": "pod", "daemonsets": "daemonset.apps",
            "configmaps": "configmap", "ippools": "ippool.crd.projectcalico.org"}
# What a NotFound names: the resource with its API group.
QUALIFIED = {"daemonsets": "daemonsets.apps", "ippools": "ippools.crd.projectcalico.org"}
NAMESPACED = {"pods", "daemonsets", "configmaps"}
SPEC = {
    "kubeconfig": "str", "namespace": "str", "all-namespaces": "bool", "output": "str",
    "filename": "list", "all": "bool", "for": "str", "timeout": "str", "no-headers": "bool",
    "client": "bool", "request-timeout": "str", "raw": "str", "dry-run": "str",
    "wait": "bool", "ignore-not-found": "bool", "ignore-daemonsets": "bool",
    "delete-emptydir-data": "bool", "force": "bool", "grace-period": "str",
}
ALIASES = {"n": "namespace", "A": "all-namespaces", "o": "output", "f": "filename"}


def err(msg, code=1):
    kl.die(msg, code)


def parse_ts(s):
    try:
        return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return time.time()


def age(obj):
    return kl.human_duration(time.time() - parse_ts(obj["metadata"].get("creationTimestamp")))


def resolve_type(word):
    w = word.lower()
    for canon, names in RESOURCES.items():
        if w in names:
            return canon
    err("error: the server doesn't have a resource type \"%s\"" % word)
    return None


class Ctx:
    def __init__(self, opts):
        self.opts = opts
        self._client = None
        self.kc = None

    @property
    def client(self):
        if self._client is None:
            timeout = 30
            if self.opts.get("request-timeout") not in (None, "0"):
                try:
                    timeout = kl.parse_duration(self.opts["request-timeout"]) or 30
                except ValueError:
                    pass
            c, kc = kl.admin_client(self.opts.get("kubeconfig"), timeout=timeout)
            if c is None:
                err(kc)
            self._client, self.kc = c, kc
        return self._client

    @property
    def namespace(self):
        if self.opts.get("namespace"):
            return self.opts["namespace"]
        return "default"

    def call(self, method, path, body=None):
        try:
            return self.client.request(method, path, body)
        except kl.ConnError as e:
            err(kl.kubectl_conn_message(e))
        except kl.ApiError as e:
            err(kl.api_error_message(e))
        return None

    def list(self, rtype, all_ns=False):
        ns = None if all_ns else self.namespace
        if rtype == "nodes":
            path = "/api/v1/nodes"
        elif rtype in ("pods", "configmaps"):
            path = ("/api/v1/" + rtype if ns is None else
                    "/api/v1/namespaces/%s/%s" % (ns, rtype))
        elif rtype == "ippools":
            path = "/apis/crd.projectcalico.org/v1/ippools"
        else:
            path = "/apis/apps/v1/%s%s" % ("" if ns is None else "namespaces/%s/" % ns, rtype)
        return self.call("GET", path)["items"]


# ------------------------------------------------------------------ printing

def node_status(n):
    st = "Unknown"
    for c in n["status"].get("conditions", []):
        if c["type"] == "Ready":
            st = "Ready" if c["status"] == "True" else "NotReady"
    if n["spec"].get("unschedulable"):
        st += ",SchedulingDisabled"
    return st


def node_roles(n):
    roles = set()
    for k, v in (n["metadata"].get("labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/"):
            roles.add(k.split("/", 1)[1])
        elif k == "kubernetes.io/role":
            roles.add(v)
    return ",".join(sorted(r for r in roles if r)) or "<none>"


def pod_columns(p):
    """READY, STATUS, RESTARTS as kubectl's printPod computes them."""
    st = p["status"]
    reason = st.get("reason") or st.get("phase", "Unknown")
    restarts, last = 0, None
    initializing = False
    inits = st.get("initContainerStatuses") or []
    ninit = len(p["spec"].get("initContainers") or [])
    for i, c in enumerate(inits):
        restarts += c.get("restartCount", 0)
        s = c.get("state", {})
        if "terminated" in s and s["terminated"].get("exitCode") == 0:
            continue
        if "terminated" in s:
            reason = "Init:" + (s["terminated"].get("reason") or "Error")
        elif "waiting" in s and s["waiting"].get("reason") not in (None, "PodInitializing"):
            reason = "Init:" + s["waiting"]["reason"]
        else:
            reason = "Init:%d/%d" % (i, ninit)
        initializing = True
        break
    ready = 0
    if not initializing:
        restarts = 0
        has_running = False
        for c in reversed(st.get("containerStatuses") or []):
            restarts += c.get("restartCount", 0)
            fin = ((c.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
            if fin:
                last = max(last or 0, parse_ts(fin))
            s = c.get("state", {})
            if "waiting" in s and s["waiting"].get("reason"):
                reason = s["waiting"]["reason"]
            elif "terminated" in s and s["terminated"].get("reason"):
                reason = s["terminated"]["reason"]
            elif "running" in s and c.get("ready"):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running"
    total = len(p["spec"].get("containers") or [])
    rs = str(restarts)
    if restarts and last:
        rs += " (%s ago)" % kl.human_duration(time.time() - last)
    return "%d/%d" % (ready, total), reason, rs


def selector_text(sel):
    return ",".join("%s=%s" % kv for kv in sorted((sel or {}).items())) or "<none>"


def table_rows(rtype, items, wide, all_ns):
    if rtype == "nodes":
        head = ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
        if wide:
            head += ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION",
                     "CONTAINER-RUNTIME"]
        rows = []
        for n in items:
            info = n["status"].get("nodeInfo") or {}
            r = [n["metadata"]["name"], node_status(n), node_roles(n), age(n),
                 info.get("kubeletVersion", "")]
            if wide:
                addrs = {a["type"]: a["address"] for a in n["status"].get("addresses", [])}
                r += [addrs.get("InternalIP", "<none>"), addrs.get("ExternalIP", "<none>"),
                      info.get("osImage", "<unknown>"), info.get("kernelVersion", "<unknown>"),
                      info.get("containerRuntimeVersion", "<unknown>")]
            rows.append(r)
    elif rtype == "pods":
        head = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        if wide:
            head += ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
        rows = []
        for p in items:
            ready, status, restarts = pod_columns(p)
            r = [p["metadata"]["name"], ready, status, restarts, age(p)]
            if wide:
                r += [p["status"].get("podIP") or "<none>", p["spec"].get("nodeName") or
                      "<none>", "<none>", "<none>"]
            rows.append(r)
    elif rtype == "daemonsets":
        head = ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE",
                "NODE SELECTOR", "AGE"]
        rows = []
        for d in items:
            s = d["status"]
            rows.append([d["metadata"]["name"], str(s["desiredNumberScheduled"]),
                         str(s["currentNumberScheduled"]), str(s["numberReady"]),
                         str(s["updatedNumberScheduled"]), str(s["numberAvailable"]),
                         selector_text(d["spec"]["template"]["spec"].get("nodeSelector")),
                         age(d)])
    elif rtype == "ippools":
        # A CRD without printer columns: kubectl's default NAME and AGE.
        head = ["NAME", "AGE"]
        rows = [[p["metadata"]["name"], age(p)] for p in items]
    else:
        head = ["NAME", "DATA", "AGE"]
        rows = [[c["metadata"]["name"], str(len(c.get("data") or {})), age(c)] for c in items]
    if all_ns and rtype in NAMESPACED:
        head = ["NAMESPACE"] + head
        rows = [[it["metadata"]["namespace"]] + r for it, r in zip(items, rows)]
    return head, rows


def as_list(items):
    return {"apiVersion": "v1", "items": items, "kind": "List",
            "metadata": {"resourceVersion": ""}}


def print_objects(rtype, items, opts, single):
    fmt = opts.get("output", "")
    if fmt in ("", "wide"):
        head, rows = table_rows(rtype, items, fmt == "wide", opts.get("all-namespaces"))
        sys.stdout.write(kl.tabwriter(rows if opts.get("no-headers") else [head] + rows))
        return
    obj = items[0] if single and len(items) == 1 else as_list(items)
    if fmt == "json":
        sys.stdout.write(json.dumps(obj, indent=4) + "\n")
    elif fmt == "yaml":
        sys.stdout.write(kl.dump_yaml(obj))
    elif fmt == "name":
        for it in items:
            sys.stdout.write("%s/%s\n" % (SINGULAR[rtype], it["metadata"]["name"]))
    elif fmt.startswith("jsonpath="):
        tmpl = fmt.split("=", 1)[1]
        if len(tmpl) >= 2 and tmpl[0] == tmpl[-1] and tmpl[0] in "'\"":
            tmpl = tmpl[1:-1]
        try:
            sys.stdout.write(jsonpath.execute(tmpl, obj))
        except jsonpath.JSONPathError as e:
            err("error: error parsing jsonpath %s, %s" % (tmpl, e))
    else:
        err("error: unable to match a printer suitable for the output format \"%s\", allowed "
            "formats are: custom-columns,custom-columns-file,go-template,go-template-file,json,"
            "jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,wide,yaml"
            % fmt)


def targets(args, opts):
    """[(rtype, [names])] from 'nodes a b', 'node/a', 'nodes,pods'."""
    out = []
    i = 0
    while i < len(args):
        a = args[i]
        if "/" in a:
            t, _, n = a.partition("/")
            out.append((resolve_type(t), [n]))
            i += 1
            continue
        types = [resolve_type(t) for t in a.split(",")]
        names = []
        i += 1
        while i < len(args) and "/" not in args[i]:
            names.append(args[i])
            i += 1
        for t in types:
            out.append((t, names))
    if not out:
        err("You must specify the type of resource to get. Use \"kubectl api-resources\" for "
            "a complete list of supported resources.\n\nerror: Required resource not specified.")
    return out


def fetch(ctx, rtype, names, opts):
    items = ctx.list(rtype, opts.get("all-namespaces") and rtype in NAMESPACED)
    missing = []
    if names:
        by = {i["metadata"]["name"]: i for i in items}
        missing = [n for n in names if n not in by]
        items = [by[n] for n in names if n in by]
    if missing:
        for n in missing:
            sys.stderr.write("Error from server (NotFound): %s \"%s\" not found\n"
                             % (QUALIFIED.get(rtype, rtype), n))
    return items, missing


# ------------------------------------------------------------------ verbs

def cmd_get(ctx, args, opts):
    if opts.get("raw"):
        r = ctx.call("GET", opts["raw"])
        sys.stdout.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
        return 0
    rc = 0
    tg = targets(args, opts)
    for idx, (rtype, names) in enumerate(tg):
        items, missing = fetch(ctx, rtype, names, opts)
        if missing:
            rc = 1
        if not items and not names and opts.get("output", "") in ("", "wide"):
            if rtype in NAMESPACED and not opts.get("all-namespaces"):
                sys.stderr.write("No resources found in %s namespace.\n" % ctx.namespace)
            else:
                sys.stderr.write("No resources found\n")
            continue
        if not items and names:
            continue
        if idx and opts.get("output", "") in ("", "wide"):
            sys.stdout.write("\n")
        print_objects(rtype, items, opts, single=len(tg) == 1 and len(names) == 1)
    return rc


def _kv_block(title, d, sep="="):
    lines = []
    items = sorted((d or {}).items())
    if not items:
        return ["%-20s<none>" % (title + ":")]
    for i, (k, v) in enumerate(items):
        lines.append("%-20s%s%s%s" % (title + ":" if i == 0 else "", k, sep, v))
    return lines


def describe_node(n, pods):
    md, st = n["metadata"], n["status"]
    L = ["%-20s%s" % ("Name:", md["name"]), "%-20s%s" % ("Roles:", node_roles(n))]
    L += _kv_block("Labels", md.get("labels"))
    L += _kv_block("Annotations", md.get("annotations"), ": ")
    ct = parse_ts(md["creationTimestamp"])
    rfc1123 = "%a, %d %b %Y %H:%M:%S +0000"
    L.append("%-20s%s" % ("CreationTimestamp:", time.strftime(rfc1123, time.gmtime(ct))))
    taints = ["%s%s:%s" % (t["key"], "=" + t["value"] if t.get("value") else "", t["effect"])
              for t in n["spec"].get("taints") or []]
    for i, t in enumerate(taints or ["<none>"]):
        L.append("%-20s%s" % ("Taints:" if i == 0 else "", t))
    L.append("%-20s%s" % ("Unschedulable:", str(bool(n["spec"].get("unschedulable"))).lower()))
    conds = st.get("conditions") or []
    hb = next((c["lastHeartbeatTime"] for c in conds if c["type"] == "Ready"), None)
    L += ["Lease:", "  HolderIdentity:  " + md["name"], "  AcquireTime:     <unset>",
          "  RenewTime:       " + (time.strftime(rfc1123, time.gmtime(parse_ts(hb))) if hb
                                   else "<unset>")]
    L.append("Conditions:")
    rows = [["  Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason",
             "Message"], ["  ----", "------", "-----------------", "------------------",
                          "------", "-------"]]
    for c in conds:
        rows.append(["  " + c["type"], c["status"],
                     time.strftime(rfc1123, time.gmtime(parse_ts(c["lastHeartbeatTime"]))),
                     time.strftime(rfc1123, time.gmtime(parse_ts(c["lastTransitionTime"]))),
                     c.get("reason", ""), c.get("message", "")])
    L += kl.tabwriter(rows, minwidth=0, padding=2).rstrip("\n").split("\n")
    L.append("Addresses:")
    for a in st.get("addresses") or []:
        L.append("  %s:  %s" % (a["type"], a["address"]))
    for title in ("Capacity", "Allocatable"):
        L.append(title + ":")
        res = st.get(title.lower()) or {}
        w = max([len(k) for k in res] + [0]) + 3
        for k in sorted(res):
            L.append("  %s%s" % ((k + ":").ljust(w), res[k]))
    info = st.get("nodeInfo") or {}
    L.append("System Info:")
    for label, key in (("Machine ID", "machineID"), ("System UUID", "systemUUID"),
                       ("Boot ID", "bootID"), ("Kernel Version", "kernelVersion"),
                       ("OS Image", "osImage"), ("Operating System", "operatingSystem"),
                       ("Architecture", "architecture"),
                       ("Container Runtime Version", "containerRuntimeVersion"),
                       ("Kubelet Version", "kubeletVersion"),
                       ("Kube-Proxy Version", "kubeProxyVersion")):
        L.append("  %-28s%s" % (label + ":", info.get(key, "")))
    cidr = n["spec"].get("podCIDR")
    if cidr:
        L.append("%-30s%s" % ("PodCIDR:", cidr))
        L.append("%-30s%s" % ("PodCIDRs:", ",".join(n["spec"].get("podCIDRs") or [cidr])))
    running = [p for p in pods if p["status"]["phase"] not in ("Succeeded", "Failed")]
    L.append("%-30s(%d in total)" % ("Non-terminated Pods:", len(running)))
    rows = [["  Namespace", "Name", "CPU Requests", "CPU Limits", "Memory Requests",
             "Memory Limits", "Age"], ["  ---------", "----", "------------", "----------",
                                       "---------------", "-------------", "---"]]
    for p in running:
        rows.append(["  " + p["metadata"]["namespace"], p["metadata"]["name"], "0 (0%)",
                     "0 (0%)", "0 (0%)", "0 (0%)", age(p)])
    L += kl.tabwriter(rows, minwidth=0, padding=2).rstrip("\n").split("\n")
    L += ["Allocated resources:", "  (Total limits may be over 100 percent, i.e., "
                                  "overcommitted.)"]
    rows = [["  Resource", "Requests", "Limits"], ["  --------", "--------", "------"]]
    for k in sorted(st.get("allocatable") or {}):
        if k == "pods":
            continue
        z = "0" if "/" in k else "0 (0%)"
        rows.append(["  " + k, z, z])
    L += kl.tabwriter(rows, minwidth=0, padding=2).rstrip("\n").split("\n")
    L.append("%-20s<none>" % "Events:")
    return "\n".join(L) + "\n"


def cmd_describe(ctx, args, opts):
    if not args:
        err("You must specify the type of resource to describe. Use \"kubectl api-resources\" "
            "for a complete list of supported resources.")
    rc = 0
    for rtype, names in targets(args, opts):
        if rtype != "nodes":
            err("error: gpuctl lab kubectl: describe supports nodes only")
        items, missing = fetch(ctx, rtype, names, opts)
        rc |= 1 if missing else 0
        pods = ctx.list("pods", True) if items else []
        for i, n in enumerate(items):
            if i:
                sys.stdout.write("\n\n")
            sys.stdout.write(describe_node(n, [p for p in pods if p["spec"].get("nodeName") ==
                                               n["metadata"]["name"]]))
    return rc


# The release manifests the lab keeps, by the URL their projects publish.
RELEASE_MANIFESTS = (
    (r"^https://github\.com/flannel-io/flannel/releases/", "kube-flannel.yml"),
    (r"^https://raw\.githubusercontent\.com/projectcalico/calico/v[0-9.]+/manifests/"
     r"calico\.yaml$", "calico.yaml"),
)


def read_sources(files):
    """[(source name, text)] for -f values: files, '-', URLs."""
    out = []
    for f in files:
        if f == "-":
            out.append(("STDIN", sys.stdin.read()))
        elif re.match(r"^https?://", f):
            # flannel's or Calico's release: the lab has no internet, so its
            # copy; any other URL (a site's mirror) is fetched for real.
            copy = next((m for pat, m in RELEASE_MANIFESTS if re.match(pat, f)), None)
            if copy:
                with open(os.path.join(kl.LIBDIR, "manifests", copy), encoding="utf-8") as fh:
                    out.append((f, fh.read()))
                continue
            import urllib.error  # noqa: PLC0415 - only for URLs
            import urllib.request  # noqa: PLC0415 - only for URLs
            try:
                with urllib.request.urlopen(f, timeout=10) as r:
                    out.append((f, r.read().decode()))
            except urllib.error.HTTPError as e:
                err("error: unable to read URL \"%s\", server reported %d %s, status code=%d"
                    % (f, e.code, e.reason, e.code))
            except OSError as e:
                host = re.sub(r"^https?://([^/]+).*$", r"\1", f)
                reason = getattr(e, "reason", e)
                err("error: Get \"%s\": dial tcp: lookup %s: %s" % (
                    f, host, "no such host" if "Name or service" in str(reason) or
                    "resolution" in str(reason) else reason))
        else:
            try:
                with open(f, encoding="utf-8") as fh:
                    out.append((f, fh.read()))
            except OSError:
                err("error: the path \"%s\" does not exist" % f)
    return out


def parse_objects(sources):
    objs = []
    for name, text in sources:
        try:
            if text.lstrip().startswith(("{", "[")):
                docs = [json.loads(text)]
            else:
                docs = kl.load_yaml_all(text)
        except ValueError as e:
            err("error: error parsing %s: error converting YAML to JSON: %s" % (name, e))
        for d in docs:
            if not isinstance(d, dict):
                continue
            items = d.get("items") if str(d.get("kind", "")).endswith("List") else [d]
            for o in items or []:
                missing = [x for x in ("apiVersion", "kind") if not o.get(x)]
                if missing:
                    err("error: error validating \"%s\": error validating data: [%s]; if you "
                        "choose to ignore these errors, turn validation off with "
                        "--validate=false" % (name, ", ".join(m + " not set" for m in missing)))
                objs.append((name, o))
    return objs


def cmd_apply(ctx, opts):
    files = opts.get("filename") or []
    if not files:
        err("error: must specify one of -f and -k")
    objs = parse_objects(read_sources(files))
    if not objs:
        err("error: no objects passed to apply")
    if opts.get("dry-run") == "client":
        for i, (_, o) in enumerate(objs):
            if opts.get("output") == "yaml":
                # kubectl's YAML printer separates the objects it prints.
                sys.stdout.write(("---\n" if i else "") + kl.dump_yaml(o))
            else:
                sys.stdout.write("%s/%s configured (dry run)\n" % (
                    o["kind"].lower(), o.get("metadata", {}).get("name", "")))
        return 0
    body = {"objects": [o for _, o in objs], "namespace": ctx.namespace}
    res = ctx.call("POST", "/gpuctl-lab/v1/apply", body)["results"]
    rc = 0
    for (src, _), r in zip(objs, res):
        if r.get("error"):
            reason, msg = r["error"]
            sys.stderr.write("Error from server (%s): error when creating \"%s\": %s\n"
                             % (reason, src, msg))
            rc = 1
        else:
            sys.stdout.write("%s %s\n" % (r["ref"], r["action"]))
    return rc


def delete_nodes(ctx, names, opts):
    """kubectl delete node NAME...: DELETE /api/v1/nodes/NAME."""
    rc = 0
    for n in names:
        try:
            ctx.client.request("DELETE", "/api/v1/nodes/" + n)
        except kl.ApiError as e:
            if getattr(e, "code", None) != 404:
                err(kl.api_error_message(e))
            if not opts.get("ignore-not-found"):
                sys.stderr.write("Error from server (NotFound): nodes \"%s\" not found\n" % n)
                rc = 1
            continue
        except kl.ConnError as e:
            err(kl.kubectl_conn_message(e))
        sys.stdout.write("node \"%s\" deleted\n" % n)
    return rc


def cmd_delete(ctx, args, opts):
    """kubectl delete pod NAME... (through the lab's apply endpoint) or node NAME..."""
    rc = 0
    for rtype, names in targets(args, opts):
        if rtype not in ("pods", "nodes"):
            err("error: gpuctl lab kubectl: delete supports pods and nodes only")
        if not names:
            err("error: resource(s) were provided, but no name was specified")
        if rtype == "nodes":
            rc = delete_nodes(ctx, names, opts) or rc
            continue
        for n in names:
            r = ctx.call("POST", "/gpuctl-lab/v1/apply", {
                "objects": [{"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": n, "namespace": ctx.namespace}}],
                "namespace": ctx.namespace, "delete": True})
            if r["results"][0].get("error"):
                if any(p["metadata"]["name"] == n for p in ctx.list("pods")):
                    # a controller-owned pod: it comes back, as in real life
                    sys.stdout.write("pod \"%s\" deleted\n" % n)
                elif not opts.get("ignore-not-found"):
                    sys.stderr.write("Error from server (NotFound): pods \"%s\" not found\n" % n)
                    rc = 1
                continue
            sys.stdout.write("pod \"%s\" deleted\n" % n)
    return rc


def set_unschedulable(ctx, name, value):
    """True when the node's spec.unschedulable changed."""
    node = next((n for n in ctx.list("nodes") if n["metadata"]["name"] == name), None)
    if node is None:
        err("Error from server (NotFound): nodes \"%s\" not found" % name)
    if bool(node["spec"].get("unschedulable")) == value:
        return False
    ctx.call("PATCH", "/api/v1/nodes/" + name, {"spec": {"unschedulable": value}})
    return True


def cmd_cordon(ctx, args, value):
    verb = "cordon" if value else "uncordon"
    if not args:
        err("error: USAGE: %s NODE [flags]\nSee 'kubectl %s -h' for help and examples" %
            (verb, verb))
    for name in args:
        changed = set_unschedulable(ctx, name, value)
        sys.stdout.write("node/%s %s%sed\n" % (name, "" if changed else "already ", verb))
    return 0


def cmd_drain(ctx, args, opts):
    """kubectl drain NODE: cordon, then evict every pod on it but DaemonSet
    and mirror (static) pods, refusing bare running pods without --force."""
    if len(args) != 1:
        err("error: USAGE: drain NODE [flags]\nSee 'kubectl drain -h' for help and examples")
    name = args[0]
    changed = set_unschedulable(ctx, name, True)
    sys.stdout.write("node/%s %scordoned\n" % (name, "" if changed else "already "))
    pods = [p for p in ctx.list("pods", all_ns=True) if p["spec"].get("nodeName") == name]
    daemons, bare, evict = [], [], []
    for p in pods:
        ref = "%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])
        owners = p["metadata"].get("ownerReferences") or []
        kind = owners[0]["kind"] if owners else None
        if kind == "Node":
            continue  # a static pod's mirror: the kubelet owns it
        if kind == "DaemonSet":
            daemons.append(ref)
            continue
        if kind is None and p["status"].get("phase") not in ("Succeeded", "Failed") and \
                not opts.get("force"):
            bare.append(ref)
        evict.append(p)
    problems = []
    if bare:
        problems.append("cannot delete Pods declare no controller (use --force to override): " +
                        ", ".join(bare))
    if daemons and not opts.get("ignore-daemonsets"):
        problems.append("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to "
                        "ignore): " + ", ".join(daemons))
    if problems:
        sys.stderr.write("error: unable to drain node \"%s\" due to error: %s, continuing "
                         "command...\nThere are pending nodes to be drained:\n %s\n%s\n" %
                         (name, "; ".join(problems), name, "\n".join(problems)))
        return 1
    if daemons:
        sys.stderr.write("Warning: ignoring DaemonSet-managed Pods: %s\n" % ", ".join(daemons))
    for p in evict:
        md = p["metadata"]
        sys.stdout.write("evicting pod %s/%s\n" % (md["namespace"], md["name"]))
        try:
            ctx.client.request("POST", "/api/v1/namespaces/%s/pods/%s/eviction" %
                               (md["namespace"], md["name"]),
                               {"apiVersion": "policy/v1", "kind": "Eviction",
                                "metadata": {"name": md["name"], "namespace": md["namespace"]}})
        except kl.ApiError as e:
            if getattr(e, "code", None) != 404:  # gone already: what eviction wanted
                err("error when evicting pods/\"%s\" -n \"%s\": %s" %
                    (md["name"], md["namespace"], kl.api_error_message(e)))
        except kl.ConnError as e:
            err(kl.kubectl_conn_message(e))
    for p in evict:
        sys.stdout.write("pod/%s evicted\n" % p["metadata"]["name"])
    sys.stdout.write("node/%s drained\n" % name)
    return 0


def cmd_logs(ctx, args):
    """kubectl logs POD (or pod/POD): what the pod's container printed."""
    if len(args) != 1:
        err("error: expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\n"
            "POD or TYPE/NAME is a required argument for the logs command")
    name = args[0].split("/", 1)[1] if args[0].startswith(("pod/", "pods/", "po/")) else args[0]
    text = ctx.call("GET", "/api/v1/namespaces/%s/pods/%s/log" % (ctx.namespace, name))
    sys.stdout.write(text if isinstance(text, str) else "")
    return 0


def _condition(obj, ctype, want):
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type", "").lower() == ctype.lower():
            return c.get("status", "").lower() == want.lower()
    return False


def cmd_wait(ctx, args, opts):
    cond = opts.get("for")
    if not cond:
        err("error: --for must be specified")
    try:
        timeout = kl.parse_duration(opts.get("timeout", "30s"))
    except ValueError as e:
        err("error: %s" % e)
    if not cond.startswith("condition="):
        err("error: unrecognized condition: \"%s\"" % cond)
    ctype, _, want = cond[len("condition="):].partition("=")
    tg = targets(args, opts)
    pending = []
    for rtype, names in tg:
        if opts.get("all") or not names:
            items, _ = fetch(ctx, rtype, [], opts)
            names = [i["metadata"]["name"] for i in items]
        elif fetch(ctx, rtype, names, opts)[1]:
            return 1
        pending += [(rtype, n) for n in names]
    if not pending:
        err("error: no matching resources found")
    deadline = time.time() + timeout
    while True:
        cache = {}
        for rtype, n in list(pending):
            if rtype not in cache:
                cache[rtype] = {i["metadata"]["name"]: i for i in ctx.list(
                    rtype, opts.get("all-namespaces") and rtype in NAMESPACED)}
            obj = cache[rtype].get(n)
            if obj is not None and _condition(obj, ctype, want or "True"):
                sys.stdout.write("%s/%s condition met\n" % (SINGULAR[rtype], n))
                sys.stdout.flush()
                pending.remove((rtype, n))
        if not pending:
            return 0
        if time.time() >= deadline:
            for rtype, n in pending:
                sys.stderr.write("error: timed out waiting for the condition on %s/%s\n"
                                 % (rtype, n))
            return 1
        time.sleep(min(1.0, max(0.05, deadline - time.time())))


def cmd_version(ctx, args, opts):
    v = kl.package_version("kubectl")
    info = kl.version_info(v)
    kust = KUSTOMIZE.get(kl.minor(v), "v5.0.4-0.20230601165947-6ce0bf390ce3")
    server = None
    problem = None
    if not opts.get("client"):
        c, kc = kl.admin_client(opts.get("kubeconfig"))
        if c is None:
            problem = kc
        else:
            try:
                server = c.get("/version")
            except kl.ConnError as e:
                problem = kl.kubectl_conn_message(e)
            except kl.ApiError as e:
                problem = kl.api_error_message(e)
    sys.stdout.write("Client Version: %s\nKustomize Version: %s\n" % (info["gitVersion"], kust))
    if server:
        sys.stdout.write("Server Version: %s\n" % server["gitVersion"])
    if problem:
        err(problem)
    return 0


def cmd_cluster_info(ctx, args, opts):
    c = ctx.client
    try:
        c.get("/version")
        ctx.call("GET", "/api/v1/namespaces")
    except kl.ConnError as e:
        err("\nTo further debug and diagnose cluster problems, use 'kubectl cluster-info "
            "dump'.\n" + kl.kubectl_conn_message(e))
    server = ctx.kc.server
    sys.stdout.write("Kubernetes control plane is running at %s\nCoreDNS is running at %s/api/"
                     "v1/namespaces/kube-system/services/kube-dns:dns/proxy\n\nTo further debug "
                     "and diagnose cluster problems, use 'kubectl cluster-info dump'.\n"
                     % (server, server))
    return 0


def cmd_config(ctx, args, opts):
    path = kl.find_kubeconfig(opts.get("kubeconfig"))
    if args != ["view"]:
        err("error: gpuctl lab kubectl: only 'config view' is implemented")
    if path is None:
        sys.stdout.write("apiVersion: v1\nclusters: null\ncontexts: null\ncurrent-context: \"\"\n"
                         "kind: Config\npreferences: {}\nusers: null\n")
        return 0
    with open(path, encoding="utf-8") as f:
        doc = kl.load_yaml(f.read()) or {}
    # Secrets are hidden, as without --raw.
    for u in doc.get("users") or []:
        for k in list((u.get("user") or {})):
            if k.endswith("-data") or k == "token":
                u["user"][k] = "REDACTED" if k != "client-certificate-data" else "DATA+OMITTED"
    for c in doc.get("clusters") or []:
        if (c.get("cluster") or {}).get("certificate-authority-data"):
            c["cluster"]["certificate-authority-data"] = "DATA+OMITTED"
    sys.stdout.write(kl.dump_yaml(doc))
    return 0


def main(argv):
    try:
        opts, pos, _ = kl.parse_flags(argv, SPEC, ALIASES)
    except kl.UsageError as e:
        verb = next((a for a in argv if not a.startswith("-")), "")
        err("error: %s\nSee 'kubectl %s--help' for usage." % (e, verb + " " if verb else ""))
    if not pos:
        sys.stdout.write("kubectl controls the Kubernetes cluster manager (gpuctl lab "
                         "stand-in).\n\nUsage:\n  kubectl [flags] [options]\n")
        return 0
    verb, args = pos[0], pos[1:]
    ctx = Ctx(opts)
    if verb == "get":
        return cmd_get(ctx, args, opts)
    if verb == "describe":
        return cmd_describe(ctx, args, opts)
    if verb == "apply":
        return cmd_apply(ctx, opts)
    if verb == "delete":
        return cmd_delete(ctx, args, opts)
    if verb == "wait":
        return cmd_wait(ctx, args, opts)
    if verb == "logs":
        return cmd_logs(ctx, args)
    if verb in ("cordon", "uncordon"):
        return cmd_cordon(ctx, args, verb == "cordon")
    if verb == "drain":
        return cmd_drain(ctx, args, opts)
    if verb == "version":
        return cmd_version(ctx, args, opts)
    if verb == "cluster-info":
        return cmd_cluster_info(ctx, args, opts)
    if verb == "config":
        return cmd_config(ctx, args, opts)
    err("error: unknown command \"%s\" for \"kubectl\"" % verb)
    return 1


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # die quietly on a closed pipe, as Go tools do
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        sys.exit(0)
