#!/usr/bin/env python3
"""kubectl stand-in for the gpuctl lab: talks to the stand-in API server and
prints what the real kubectl prints for the verbs gpuctl uses:

  get (nodes, pods, daemonsets, deployments, namespaces; -o wide|json|yaml|name|
  jsonpath=...|custom-columns=...; -l; -A; --no-headers; --show-labels; --raw),
  describe node, apply/create/delete -f (files, dirs, -, flannel URLs), create
  namespace, delete node|namespace, wait --for=condition=..., rollout status,
  label, taint, cordon, uncordon, drain, version, cluster-info, config view.
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
    "deployments": ("deployment", "deployments", "deploy", "deployment.apps",
                    "deployments.apps"),
    "namespaces": ("namespace", "namespaces", "ns"),
    "configmaps": ("configmap", "configmaps", "cm"),
}
SINGULAR = {"nodes": "node", "pods": "pod", "daemonsets": "daemonset.apps",
            "deployments": "deployment.apps", "namespaces": "namespace",
            "configmaps": "configmap"}
NAMESPACED = {"pods", "daemonsets", "deployments", "configmaps"}
SPEC = {
    "kubeconfig": "str", "namespace": "str", "all-namespaces": "bool", "output": "str",
    "selector": "str", "filename": "list", "all": "bool", "for": "str", "timeout": "str",
    "watch": "bool", "no-headers": "bool", "show-labels": "bool", "client": "bool",
    "short": "bool", "context": "str", "v": "str", "request-timeout": "str", "recursive": "bool",
    "overwrite": "bool", "force": "bool", "grace-period": "str", "ignore-daemonsets": "bool",
    "delete-emptydir-data": "bool", "delete-local-data": "bool", "raw": "str",
    "field-selector": "str", "sort-by": "str", "server-side": "bool", "dry-run": "str",
    "validate": "str", "wait": "bool", "cascade": "str", "insecure-skip-tls-verify": "bool",
    "allow-missing-template-keys": "bool", "now": "bool", "ignore-not-found": "bool",
    "minify": "bool", "flatten": "bool", "cluster": "str", "user": "str", "server": "str",
    "show-kind": "bool", "label-columns": "list", "field-manager": "str",
    "force-conflicts": "bool", "record": "bool", "save-config": "bool", "prune": "bool",
    "chunk-size": "str", "show-events": "str", "container": "str",
}
ALIASES = {"c": "container", "n": "namespace", "A": "all-namespaces", "o": "output", "l": "selector",
           "f": "filename", "w": "watch", "R": "recursive", "L": "label-columns", "s": "server"}


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

    def try_call(self, method, path, body=None):
        """Like call, but returns the ApiError for the caller to word."""
        try:
            return self.client.request(method, path, body), None
        except kl.ConnError as e:
            err(kl.kubectl_conn_message(e))
        except kl.ApiError as e:
            return None, e
        return None, None

    def list(self, rtype, all_ns=False):
        ns = None if all_ns else self.namespace
        if rtype == "nodes":
            path = "/api/v1/nodes"
        elif rtype == "namespaces":
            path = "/api/v1/namespaces"
        elif rtype in ("pods", "configmaps"):
            path = ("/api/v1/" + rtype if ns is None else
                    "/api/v1/namespaces/%s/%s" % (ns, rtype))
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


def table_rows(rtype, items, wide, all_ns, show_labels):
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
    elif rtype == "deployments":
        head = ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
        rows = []
        for d in items:
            s = d["status"]
            rows.append([d["metadata"]["name"], "%d/%d" % (s.get("readyReplicas", 0),
                                                           d["spec"]["replicas"]),
                         str(s.get("updatedReplicas", 0)), str(s.get("availableReplicas", 0)),
                         age(d)])
    elif rtype == "configmaps":
        head = ["NAME", "DATA", "AGE"]
        rows = [[c["metadata"]["name"], str(len(c.get("data") or {})), age(c)] for c in items]
    else:
        head = ["NAME", "STATUS", "AGE"]
        rows = [[n["metadata"]["name"], n["status"]["phase"], age(n)] for n in items]
    if all_ns and rtype in NAMESPACED:
        head = ["NAMESPACE"] + head
        rows = [[it["metadata"]["namespace"]] + r for it, r in zip(items, rows)]
    if show_labels:
        head.append("LABELS")
        for it, r in zip(items, rows):
            r.append(",".join("%s=%s" % kv for kv in sorted(
                (it["metadata"].get("labels") or {}).items())) or "<none>")
    return head, rows


def as_list(items):
    return {"apiVersion": "v1", "items": items, "kind": "List",
            "metadata": {"resourceVersion": ""}}


def print_objects(rtype, items, opts, single):
    fmt = opts.get("output", "")
    if fmt in ("", "wide"):
        head, rows = table_rows(rtype, items, fmt == "wide", opts.get("all-namespaces"),
                                opts.get("show-labels"))
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
    elif fmt.startswith("jsonpath=") or fmt.startswith("jsonpath-as-json="):
        tmpl = fmt.split("=", 1)[1]
        if len(tmpl) >= 2 and tmpl[0] == tmpl[-1] and tmpl[0] in "'\"":
            tmpl = tmpl[1:-1]
        try:
            if fmt.startswith("jsonpath-as-json="):
                vals = jsonpath.evaluate(jsonpath.parse_path(tmpl.strip("{}"))[0], [obj])
                sys.stdout.write(json.dumps(vals, indent=4) + "\n")
            else:
                sys.stdout.write(jsonpath.execute(tmpl, obj))
        except jsonpath.JSONPathError as e:
            err("error: error parsing jsonpath %s, %s" % (tmpl, e))
    elif fmt.startswith("custom-columns="):
        cols = []
        for spec in fmt.split("=", 1)[1].split(","):
            if ":" not in spec:
                err("error: custom-columns format specified but no custom columns given")
            h, _, expr = spec.partition(":")
            try:
                cols.append((h, jsonpath.parse_template(jsonpath.relaxed(expr))))
            except jsonpath.JSONPathError as e:
                err("error: unexpected path string, expected a 'name1:path1,name2:path2' "
                    "string: %s" % e)
        rows = [] if opts.get("no-headers") else [[h for h, _ in cols]]
        for it in items:
            row = []
            for _, nodes in cols:
                vals = jsonpath.evaluate(nodes[0][1], [it]) if nodes and \
                    nodes[0][0] == "path" else []
                row.append(",".join(jsonpath.fmt(v) for v in vals) if vals else "<none>")
            rows.append(row)
        sys.stdout.write(kl.tabwriter(rows))
    else:
        err("error: unable to match a printer suitable for the output format \"%s\", allowed "
            "formats are: custom-columns,custom-columns-file,go-template,go-template-file,json,"
            "jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,wide,yaml"
            % fmt)


def match_selector(labels, sel):
    labels = labels or {}
    for term in [t.strip() for t in (sel or "").split(",") if t.strip()]:
        m = re.match(r"^([^!=]+?)\s*(==|=|!=)\s*(.*)$", term)
        if m:
            k, op, v = m.group(1).strip(), m.group(2), m.group(3).strip()
            if op == "!=":
                if labels.get(k) == v:
                    return False
            elif labels.get(k) != v:
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True


def match_fields(obj, sel):
    for term in [t.strip() for t in (sel or "").split(",") if t.strip()]:
        m = re.match(r"^([^!=]+?)\s*(==|=|!=)\s*(.*)$", term)
        if not m:
            err("error: invalid field selector: %s" % term)
        got = jsonpath.evaluate(jsonpath.parse_path("." + m.group(1))[0], [obj])
        val = jsonpath.fmt(got[0]) if got else ""
        if (m.group(2) == "!=") == (val == m.group(3)):
            return False
    return True


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


def fetch(ctx, rtype, names, opts, missing_ok=False):
    items = ctx.list(rtype, opts.get("all-namespaces") and rtype in NAMESPACED)
    items = [i for i in items if match_selector(i["metadata"].get("labels"),
                                                opts.get("selector"))
             and match_fields(i, opts.get("field-selector"))]
    missing = []
    if names:
        by = {i["metadata"]["name"]: i for i in items}
        missing = [n for n in names if n not in by]
        items = [by[n] for n in names if n in by]
    if missing and not missing_ok:
        for n in missing:
            sys.stderr.write("Error from server (NotFound): %s%s \"%s\" not found\n"
                             % (rtype, ".apps" if rtype in ("daemonsets", "deployments")
                                else "", n))
    if opts.get("sort-by"):
        key = jsonpath.parse_path(opts["sort-by"].strip("{}"))[0]
        items.sort(key=lambda i: jsonpath.fmt((jsonpath.evaluate(key, [i]) or [""])[0]))
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


FLANNEL_MANIFEST = os.path.join(kl.LIBDIR, "manifests", "kube-flannel.yml")


def read_sources(files, recursive=False):
    """[(source name, text)] for -f values: files, directories, '-', URLs."""
    out = []
    for f in files:
        if f == "-":
            out.append(("STDIN", sys.stdin.read()))
        elif re.match(r"^https?://", f):
            # flannel's release on GitHub: the lab has no internet, so its
            # copy; any other URL (a site's mirror) is fetched for real.
            if re.match(r"^https://github\.com/flannel-io/flannel/releases/", f):
                with open(FLANNEL_MANIFEST, encoding="utf-8") as fh:
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
        elif os.path.isdir(f):
            for dirpath, dirs, names in os.walk(f):
                for n in sorted(names):
                    if n.endswith((".yaml", ".yml", ".json")):
                        p = os.path.join(dirpath, n)
                        with open(p, encoding="utf-8") as fh:
                            out.append((p, fh.read()))
                if not recursive:
                    break
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


def cmd_apply(ctx, args, opts, mode="apply"):
    files = opts.get("filename") or []
    if not files:
        err("error: must specify one of -f and -k")
    objs = parse_objects(read_sources(files, opts.get("recursive")))
    if not objs:
        err("error: no objects passed to %s" % mode)
    if opts.get("dry-run") in ("client", "server", "true"):
        for i, (_, o) in enumerate(objs):
            if opts.get("output") == "yaml":
                # kubectl's YAML printer separates the objects it prints.
                sys.stdout.write(("---\n" if i else "") + kl.dump_yaml(o))
            elif opts.get("output") == "json":
                sys.stdout.write(json.dumps(o, indent=4) + "\n")
            else:
                sys.stdout.write("%s/%s %s (dry run)\n" % (o["kind"].lower(), o.get(
                    "metadata", {}).get("name", ""), "created" if mode == "create" else
                    "configured"))
        return 0
    body = {"objects": [o for _, o in objs], "namespace": ctx.namespace,
            "delete": mode == "delete", "create": mode == "create"}
    res = ctx.call("POST", "/gpuctl-lab/v1/apply", body)["results"]
    rc = 0
    for (src, _), r in zip(objs, res):
        if r.get("error"):
            reason, msg = r["error"]
            if mode == "delete" and reason == "NotFound" and opts.get("ignore-not-found"):
                continue
            verb = {"delete": "deleting", "create": "creating"}.get(mode, "creating")
            sys.stderr.write("Error from server (%s): error when %s \"%s\": %s\n"
                             % (reason, verb, src, msg))
            rc = 1
        elif mode == "delete":
            sys.stdout.write("%s \"%s\" deleted\n" % (r["ref"].split("/")[0], r["name"]))
        else:
            sys.stdout.write("%s %s\n" % (r["ref"], r["action"]))
    return rc


def cmd_create(ctx, args, opts):
    if args and args[0] in ("namespace", "ns"):
        if len(args) < 2:
            err("error: exactly one NAME is required, got 0")
        obj = {"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"creationTimestamp": None, "name": args[1]}, "spec": {},
               "status": {}}
        if opts.get("dry-run"):
            if opts.get("output") == "yaml":
                sys.stdout.write(kl.dump_yaml(obj))
            elif opts.get("output") == "json":
                sys.stdout.write(json.dumps(obj, indent=4) + "\n")
            else:
                sys.stdout.write("namespace/%s created (dry run)\n" % args[1])
            return 0
        ctx.call("POST", "/api/v1/namespaces", {"metadata": {"name": args[1]}})
        sys.stdout.write("namespace/%s created\n" % args[1])
        return 0
    if opts.get("filename"):
        return cmd_apply(ctx, args, opts, "create")
    err("error: gpuctl lab kubectl: create supports -f and 'namespace NAME' only")
    return 1


def cmd_delete(ctx, args, opts):
    if opts.get("filename"):
        return cmd_apply(ctx, args, opts, "delete")
    rc = 0
    for rtype, names in targets(args, opts):
        if opts.get("all"):
            names = [i["metadata"]["name"] for i in ctx.list(rtype)]
        if not names:
            err("error: resource(s) were provided, but no name was specified")
        for n in names:
            if rtype == "nodes":
                _, e = ctx.try_call("DELETE", "/api/v1/nodes/" + n)
            elif rtype == "namespaces":
                _, e = ctx.try_call("DELETE", "/api/v1/namespaces/" + n)
            else:
                kind = {"pods": "Pod", "daemonsets": "DaemonSet",
                        "deployments": "Deployment"}[rtype]
                api = "v1" if rtype == "pods" else "apps/v1"
                r, e = ctx.try_call("POST", "/gpuctl-lab/v1/apply", {
                    "objects": [{"apiVersion": api, "kind": kind,
                                 "metadata": {"name": n, "namespace": ctx.namespace}}],
                    "namespace": ctx.namespace, "delete": True})
                if r and r["results"][0].get("error"):
                    if rtype == "pods":
                        pods = ctx.list("pods")
                        if any(p["metadata"]["name"] == n for p in pods):
                            r = None  # a controller-owned pod: it comes back, as in real life
                    if r:
                        if not opts.get("ignore-not-found"):
                            sys.stderr.write("Error from server (NotFound): %s \"%s\" not found\n"
                                             % (r["results"][0]["resource"], n))
                            rc = 1
                        continue
            if e:
                if e.code == 404 and opts.get("ignore-not-found"):
                    continue
                sys.stderr.write(kl.api_error_message(e) + "\n")
                rc = 1
                continue
            sys.stdout.write("%s \"%s\" deleted\n" % (SINGULAR[rtype], n))
    return rc


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
    if cond.startswith("condition="):
        ctype, _, want = cond[len("condition="):].partition("=")
        check = lambda o: _condition(o, ctype, want or "True")  # noqa: E731
    elif cond.startswith("jsonpath="):
        expr, _, want = cond[len("jsonpath="):].rpartition("=")
        expr = expr.strip("'\"")
        check = lambda o: jsonpath.execute(jsonpath.relaxed(expr), o) == want  # noqa: E731
    elif cond == "delete":
        check = None
    else:
        err("error: unrecognized condition: \"%s\"" % cond)
    tg = targets(args, opts)
    pending = []
    for rtype, names in tg:
        if opts.get("all") or opts.get("selector") or not names:
            items, _ = fetch(ctx, rtype, [], opts)
            names = [i["metadata"]["name"] for i in items]
        else:
            items, missing = fetch(ctx, rtype, names, opts, missing_ok=(check is None))
            if missing and check is not None:
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
            done = obj is None if check is None else (obj is not None and check(obj))
            if done:
                sys.stdout.write("%s/%s %s\n" % (SINGULAR[rtype], n, "deleted" if check is None
                                                 else "condition met"))
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


def cmd_rollout(ctx, args, opts):
    if not args or args[0] != "status":
        err("error: gpuctl lab kubectl: only 'rollout status' is implemented")
    tg = targets(args[1:], opts)
    try:
        timeout = kl.parse_duration(opts.get("timeout", "0s"))
    except ValueError as e:
        err("error: %s" % e)
    deadline = time.time() + (timeout or 1e9)
    for rtype, names in tg:
        if rtype not in ("daemonsets", "deployments") or len(names) != 1:
            err("error: no status viewer has been implemented for %s" % rtype)
        last = None
        while True:
            path = "/apis/apps/v1/namespaces/%s/%s/%s" % (ctx.namespace, rtype, names[0])
            obj = ctx.call("GET", path)
            s = obj["status"]
            if rtype == "daemonsets":
                want, have = s["desiredNumberScheduled"], s["numberAvailable"]
                msg = ("Waiting for daemon set \"%s\" rollout to finish: %d of %d updated pods "
                       "are available...") % (names[0], have, want)
                done = "daemon set \"%s\" successfully rolled out" % names[0]
            else:
                want, have = obj["spec"]["replicas"], s.get("availableReplicas", 0)
                msg = ("Waiting for deployment \"%s\" rollout to finish: %d of %d updated "
                       "replicas are available...") % (names[0], have, want)
                done = "deployment \"%s\" successfully rolled out" % names[0]
            if have >= want:
                sys.stdout.write(done + "\n")
                break
            if msg != last:
                sys.stdout.write(msg + "\n")
                sys.stdout.flush()
                last = msg
            if time.time() >= deadline:
                err("error: timed out waiting for the condition")
            time.sleep(1)
    return 0


def cmd_label(ctx, args, opts):
    if not args or resolve_type(args[0].split("/")[0]) != "nodes":
        err("error: gpuctl lab kubectl: label supports nodes only")
    rest = args[1:] if "/" not in args[0] else args[1:]
    if "/" in args[0]:
        names = [args[0].split("/", 1)[1]]
        changes = rest
    else:
        names = [a for a in rest if "=" not in a and not a.endswith("-")]
        changes = [a for a in rest if "=" in a or a.endswith("-")]
    if opts.get("all"):
        names = [n["metadata"]["name"] for n in ctx.list("nodes")]
    if not changes:
        err("error: at least one label update is required")
    for n in names:
        node = ctx.call("GET", "/api/v1/nodes/" + n)
        labels = node["metadata"].get("labels") or {}
        patch = {}
        for c in changes:
            if c.endswith("-") and "=" not in c:
                patch[c[:-1]] = None
            else:
                k, _, v = c.partition("=")
                if k in labels and labels[k] != v and not opts.get("overwrite"):
                    err("error: '%s' already has a value (%s), and --overwrite is false"
                        % (k, labels[k]))
                patch[k] = v
        ctx.call("PATCH", "/api/v1/nodes/" + n, {"metadata": {"labels": patch}})
        word = "unlabeled" if all(v is None for v in patch.values()) else "labeled"
        sys.stdout.write("node/%s %s\n" % (n, word))
    return 0


def cmd_taint(ctx, args, opts):
    if not args or resolve_type(args[0].split("/")[0]) != "nodes":
        err("error: gpuctl lab kubectl: taint supports nodes only")
    if "/" in args[0]:
        names, specs = [args[0].split("/", 1)[1]], args[1:]
    else:
        names = [a for a in args[1:] if "=" not in a and ":" not in a and not a.endswith("-")]
        specs = [a for a in args[1:] if a not in names]
    if opts.get("all"):
        names = [n["metadata"]["name"] for n in ctx.list("nodes")]
    if not specs:
        err("error: at least one taint update is required")
    for n in names:
        node = ctx.call("GET", "/api/v1/nodes/" + n)
        # Only the stored taints; the node-lifecycle ones are computed by the server.
        taints = [t for t in node["spec"].get("taints") or [] if not t["key"].startswith(
            "node.kubernetes.io/")]
        removed = added = False
        for sp in specs:
            if sp.endswith("-"):
                key, _, eff = sp[:-1].partition(":")
                key = key.split("=")[0]
                keep = [t for t in taints if not (t["key"] == key and (not eff or
                                                                       t["effect"] == eff))]
                if len(keep) == len(taints):
                    err("error: taint \"%s\" not found" % sp[:-1])
                taints, removed = keep, True
            else:
                kv, _, eff = sp.partition(":")
                if eff not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                    err("error: invalid taint spec: %s, unsupported taint effect" % sp)
                key, _, val = kv.partition("=")
                same = [t for t in taints if t["key"] == key and t["effect"] == eff]
                if same and not opts.get("overwrite"):
                    err("error: node %s already has %s taint(s) with same effect(s) and "
                        "--overwrite is false" % (n, key))
                taints = [t for t in taints if t not in same]
                t = {"key": key, "effect": eff}
                if val:
                    t["value"] = val
                taints.append(t)
                added = True
        ctx.call("PATCH", "/api/v1/nodes/" + n, {"spec": {"taints": taints}})
        sys.stdout.write("node/%s %s\n" % (n, "untainted" if removed and not added
                                           else "tainted"))
    return 0


def cmd_cordon(ctx, args, opts, on, verb):
    names = []
    for rtype, ns in targets(["nodes"] + args if args and "/" not in args[0] else args, opts):
        names += ns
    if opts.get("all") or opts.get("selector"):
        names = [n["metadata"]["name"] for n in fetch(ctx, "nodes", [], opts)[0]]
    if not names:
        err("error: resource(s) were provided, but no name was specified")
    for n in names:
        node = ctx.call("GET", "/api/v1/nodes/" + n)
        if bool(node["spec"].get("unschedulable")) == on:
            sys.stdout.write("node/%s already %s\n" % (n, "cordoned" if on else "uncordoned"))
            if verb != "drained":
                continue
        else:
            ctx.call("PATCH", "/api/v1/nodes/" + n, {"spec": {"unschedulable": on}})
            sys.stdout.write("node/%s %s\n" % (n, "cordoned" if on else "uncordoned"))
        if verb == "drained":
            pods = [p for p in ctx.list("pods", True) if p["spec"].get("nodeName") == n]
            ds = [p for p in pods if any(o["kind"] == "DaemonSet" for o in
                                         p["metadata"].get("ownerReferences") or [])]
            if ds and not opts.get("ignore-daemonsets"):
                err("error: unable to drain node \"%s\" due to error: cannot delete "
                    "DaemonSet-managed Pods (use --ignore-daemonsets to ignore): %s, continuing "
                    "command...\nThere are pending nodes to be drained:\n %s\nerror: cannot "
                    "delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): %s"
                    % (n, ", ".join("%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])
                                    for p in ds), n,
                       ", ".join("%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])
                                 for p in ds)))
            if ds:
                sys.stdout.write("Warning: ignoring DaemonSet-managed Pods: %s\n" % ", ".join(
                    "%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"]) for p in ds))
            for p in pods:
                owners = p["metadata"].get("ownerReferences") or []
                if p in ds or any(o["kind"] == "Node" for o in owners):
                    continue
                sys.stdout.write("evicting pod %s/%s\n" % (p["metadata"]["namespace"],
                                                           p["metadata"]["name"]))
                sys.stdout.write("pod/%s evicted\n" % p["metadata"]["name"])
            sys.stdout.write("node/%s drained\n" % n)
    return 0


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
    fmt = opts.get("output", "")
    if fmt in ("json", "yaml"):
        obj = {"clientVersion": info, "kustomizeVersion": kust}
        if server:
            obj["serverVersion"] = server
        sys.stdout.write(json.dumps(obj, indent=2) + "\n" if fmt == "json" else
                         kl.dump_yaml(obj))
    else:
        sys.stdout.write("Client Version: %s\nKustomize Version: %s\n" % (info["gitVersion"],
                                                                          kust))
        if server:
            sys.stdout.write("Server Version: %s\n" % server["gitVersion"])
    if server and abs(int(server["minor"]) - int(info["minor"])) > 1:
        sys.stderr.write("WARNING: version difference between client (1.%s) and server (1.%s) "
                         "exceeds the supported minor version skew of +/-1\n"
                         % (info["minor"], server["minor"]))
    if problem:
        err(problem)
    return 0


def cmd_cluster_info(ctx, args, opts):
    if args and args[0] == "dump":
        err("error: gpuctl lab kubectl: cluster-info dump is not implemented")
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
    if not args or args[0] not in ("view", "current-context"):
        err("error: gpuctl lab kubectl: only 'config view' and 'config current-context' are "
            "implemented")
    if path is None:
        if args[0] == "current-context":
            err("error: current-context is not set")
        sys.stdout.write("apiVersion: v1\nclusters: null\ncontexts: null\ncurrent-context: \"\"\n"
                         "kind: Config\npreferences: {}\nusers: null\n")
        return 0
    with open(path, encoding="utf-8") as f:
        doc = kl.load_yaml(f.read()) or {}
    if args[0] == "current-context":
        sys.stdout.write(doc.get("current-context", "") + "\n")
        return 0
    if not opts.get("raw"):
        for u in doc.get("users") or []:
            for k in list((u.get("user") or {})):
                if k.endswith("-data") or k == "token":
                    u["user"][k] = "REDACTED" if k != "client-certificate-data" else \
                        "DATA+OMITTED"
        for c in doc.get("clusters") or []:
            if (c.get("cluster") or {}).get("certificate-authority-data"):
                c["cluster"]["certificate-authority-data"] = "DATA+OMITTED"
    sys.stdout.write(kl.dump_yaml(doc))
    return 0


def main(argv):
    argv = ["--dry-run=client" if a == "--dry-run" else a for a in argv]
    if "--raw" in argv and argv[:2] == ["config", "view"]:
        argv = [a for a in argv if a != "--raw"] + ["--minify=false"]
        raw_view = True
    else:
        raw_view = False
    try:
        opts, pos, _ = kl.parse_flags(argv, SPEC, ALIASES)
    except kl.UsageError as e:
        verb = next((a for a in argv if not a.startswith("-")), "")
        err("error: %s\nSee 'kubectl %s--help' for usage." % (e, verb + " " if verb else ""))
    if raw_view:
        opts["raw"] = True
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
        return cmd_apply(ctx, args, opts)
    if verb == "create":
        return cmd_create(ctx, args, opts)
    if verb == "delete":
        return cmd_delete(ctx, args, opts)
    if verb == "wait":
        return cmd_wait(ctx, args, opts)
    if verb == "logs":
        return cmd_logs(ctx, args)
    if verb == "rollout":
        return cmd_rollout(ctx, args, opts)
    if verb == "label":
        return cmd_label(ctx, args, opts)
    if verb == "taint":
        return cmd_taint(ctx, args, opts)
    if verb in ("cordon", "uncordon", "drain"):
        return cmd_cordon(ctx, args, opts, verb != "uncordon",
                          {"cordon": "cordoned", "uncordon": "uncordoned"}.get(verb, "drained"))
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
