#!/usr/bin/env python3
"""helm stand-in for the gpuctl lab.

Repositories are recorded locally (helm's repositories.yaml). NVIDIA's NGC
repository is answered from CATALOG (the lab has no internet); any other
repository is fetched like real helm does: `repo add` downloads its
index.yaml into the cache, `install` downloads the chart archive the index
names and reads its Chart.yaml. A chart archive given as a path or an http(s)
URL is read the same way. Releases live in the stand-in API server, like real helm keeps
them as Secrets in the cluster, so every node and kubectl see the same ones.
Only what gpuctl's steps and the lab's tests call is there
(docs/standins-kubernetes.md, "helm"). Installing nvidia/gpu-operator makes the server run the operator's pods and,
with driver.enabled=false and a working nvidia-smi on a node, advertise
nvidia.com/gpu there.
"""
import io
import json
import os
import re
import signal
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request

import kubelib as kl

VERSION = ("v3.16.2", "13654a52f7c70a143b1dd51416d633e1071faffb", "go1.22.7")
# Charts the lab knows per repository URL; other repositories accept any chart.
CATALOG = {
    "helm.ngc.nvidia.com/nvidia": {
        "gpu-operator": ["v24.9.0", "v24.6.2", "v24.3.0", "v23.9.2"],
    },
}
SPEC = {
    "kubeconfig": "str", "namespace": "str", "repository-config": "str",
    "repository-cache": "str", "short": "bool", "force-update": "bool", "output": "str",
    "create-namespace": "bool", "set": "list", "version": "str", "wait": "bool",
    "timeout": "str", "install": "bool", "all-namespaces": "bool",
}
ALIASES = {"n": "namespace", "o": "output", "A": "all-namespaces", "q": "short"}


def err(msg):
    kl.die("Error: " + msg)


def repo_config(opts):
    return opts.get("repository-config") or os.environ.get("HELM_REPOSITORY_CONFIG") or \
        os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"),
                     "helm", "repositories.yaml")


def repo_cache(opts):
    return opts.get("repository-cache") or os.environ.get("HELM_REPOSITORY_CACHE") or \
        os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                     "helm", "repository")


def load_repos(opts):
    try:
        with open(repo_config(opts), encoding="utf-8") as f:
            doc = kl.load_yaml(f.read()) or {}
    except OSError:
        doc = {}
    return doc.get("repositories") or []


def save_repos(opts, repos):
    kl.write_file(repo_config(opts), kl.dump_yaml({
        "apiVersion": "", "generated": "0001-01-01T00:00:00Z", "repositories": repos}), 0o600)


def catalog_for(url):
    key = re.sub(r"^[a-z]+://", "", url).rstrip("/")
    return CATALOG.get(key)


def fetch(url):
    """The body at url, or (None, reason) the way Go's HTTP client words it."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read(), None
    except urllib.error.HTTPError as e:
        return None, "failed to fetch %s : %d %s" % (url, e.code, e.reason)
    except (urllib.error.URLError, OSError) as e:
        host = urllib.parse.urlparse(url).netloc
        return None, "Get \"%s\": dial tcp %s: %s" % (url, host, getattr(e, "reason", e))


def index_path(opts, name):
    return os.path.join(repo_cache(opts), name + "-index.yaml")


def write_index(opts, name, url):
    if catalog_for(url) is None:
        # Real helm: download <url>/index.yaml into the cache, or refuse.
        body, why = fetch(url.rstrip("/") + "/index.yaml")
        if body is None:
            err("looks like \"%s\" is not a valid chart repository or cannot be reached: %s"
                % (url, why))
        try:
            doc = kl.load_yaml(body.decode()) or {}
        except ValueError as e:
            doc = {"error": str(e)}
        if not isinstance(doc, dict) or not isinstance(doc.get("entries"), dict):
            err("looks like \"%s\" is not a valid chart repository or cannot be reached: "
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string "
                "into Go value of type repo.IndexFile" % url)
        kl.write_file(index_path(opts, name), body.decode())
        return
    charts = catalog_for(url) or {}
    entries = {c: [{"name": c, "version": v, "appVersion": v, "urls": [
        "%s/charts/%s-%s.tgz" % (url.rstrip("/"), c, v)]} for v in vs]
        for c, vs in charts.items()}
    kl.write_file(index_path(opts, name), kl.dump_yaml({
        "apiVersion": "v1", "entries": entries, "generated": kl.rfc3339(time.time())}))


def cmd_repo(args, opts):
    sub = args[0] if args else ""
    repos = load_repos(opts)
    if sub == "add":
        if len(args) < 3:
            err("\"helm repo add\" requires 2 arguments\n\nUsage:  helm repo add [NAME] [URL] "
                "[flags]")
        name, url = args[1], args[2]
        if not re.match(r"^(https?|oci)://", url):
            err("could not find protocol handler for: %s" % url.split(":")[0])
        old = next((r for r in repos if r["name"] == name), None)
        if old and old["url"] == url and not opts.get("force-update"):
            print("\"%s\" already exists with the same configuration, skipping" % name)
            return 0
        if old and not opts.get("force-update"):
            err("repository name (%s) already exists, please specify a different name" % name)
        repos = [r for r in repos if r["name"] != name] + [{
            "caFile": "", "certFile": "", "insecure_skip_tls_verify": False, "keyFile": "",
            "name": name, "pass_credentials_all": False, "password": "", "url": url,
            "username": ""}]
        # The index first: a repository that cannot be reached is not added.
        write_index(opts, name, url)
        save_repos(opts, repos)
        print("\"%s\" has been added to your repositories" % name)
        return 0
    if sub in ("update", "up"):
        if not repos:
            err("no repositories found. You must add one before updating")
        names = args[1:]
        for n in names:
            if not any(r["name"] == n for r in repos):
                err("no repositories found matching '%s'.  Nothing will be updated" % n)
        print("Hang tight while we grab the latest from your chart repositories...")
        for r in repos:
            if names and r["name"] not in names:
                continue
            write_index(opts, r["name"], r["url"])
            print("...Successfully got an update from the \"%s\" chart repository" % r["name"])
        print("Update Complete. \u2388Happy Helming!\u2388")
        return 0
    if sub in ("list", "ls"):
        if not repos:
            err("no repositories to show")
        sys.stdout.write(kl.uitable([["NAME", "URL"]] + [[r["name"], r["url"]] for r in repos]))
        return 0
    err("unknown command \"%s\" for \"helm repo\"" % sub)
    return 1


def parse_set_value(v):
    if v in ("true", "false"):
        return v == "true"
    if v == "null":
        return None
    if re.fullmatch(r"-?[0-9]+", v) and not (len(v) > 1 and v.lstrip("-").startswith("0")):
        return int(v)
    return v


def set_path(values, path, value):
    parts = [p for p in re.split(r"(?<!\\)\.", path)]
    cur = values
    for p in parts[:-1]:
        p = p.replace("\\.", ".")
        if not isinstance(cur.get(p), dict):
            cur[p] = {}
        cur = cur[p]
    cur[parts[-1].replace("\\.", ".")] = value


def user_values(opts):
    """The values --set gives (a.b=c,d=e), typed as helm's strvals does."""
    values = {}
    for item in opts.get("set", []):
        for assign in re.split(r"(?<!\\),", item):
            if "=" not in assign:
                err("failed parsing --set data: key \"%s\" has no value" % assign)
            k, _, v = assign.partition("=")
            set_path(values, k, parse_set_value(v.replace("\\,", ",")))
    return values


def chart_meta(data, where, action):
    """(name, version, appVersion) from a chart archive's <chart>/Chart.yaml."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            member = next((m for m in tar.getmembers()
                           if m.isfile() and m.name.count("/") == 1 and
                           m.name.endswith("/Chart.yaml")), None)
            if member is None:
                err("%s: Chart.yaml file is missing" % action)
            c = kl.load_yaml(tar.extractfile(member).read().decode()) or {}
    except (tarfile.TarError, OSError, EOFError):
        err("%s: file '%s' does not appear to be a gzipped archive; got 'application/octet-"
            "stream'" % (action, where))
    if not c.get("name"):
        err("%s: validation: chart.metadata.name is required" % action)
    return str(c["name"]), str(c.get("version", "")), str(c.get("appVersion", ""))


def from_index(opts, repo, chart, want, action):
    """(name, version, appVersion) of the chart the cached index offers."""
    try:
        with open(index_path(opts, repo["name"]), encoding="utf-8") as f:
            doc = kl.load_yaml(f.read()) or {}
    except OSError:
        err("%s: no cached repo found. (try 'helm repo update'): open %s: no such file or "
            "directory" % (action, index_path(opts, repo["name"])))
    versions = (doc.get("entries") or {}).get(chart) or []
    if not versions:
        err("%s: chart \"%s\" matching %s not found in %s index. (try 'helm repo update'): no "
            "chart name found" % (action, chart, want, repo["name"]))
    match = [v for v in versions if not want or str(v.get("version")).lstrip("v") ==
             want.lstrip("v")]
    if not match:
        err("%s: chart \"%s\" matching %s not found in %s index. (try 'helm repo update'): "
            "no chart version found for %s-%s" % (action, chart, want, repo["name"], chart, want))
    url = urllib.parse.urljoin(repo["url"].rstrip("/") + "/", (match[0].get("urls") or [""])[0])
    data, why = fetch(url)
    if data is None:
        err("%s: %s" % (action, why))
    return chart_meta(data, url, action)


def resolve_chart(ref, opts, action):
    """(chart ref, name, version, appVersion) or exits with helm's error."""
    if ref.startswith("/") and not os.path.exists(ref):
        err("%s: path \"%s\" not found" % (action, ref))
    if ref.endswith(".tgz") and os.path.exists(ref):
        with open(ref, "rb") as f:
            return (ref,) + chart_meta(f.read(), ref, action)
    if re.match(r"^https?://", ref):
        # An archive by URL: helm downloads it and reads its Chart.yaml.
        data, why = fetch(ref)
        if data is None:
            err("%s: %s" % (action, why))
        return (ref,) + chart_meta(data, ref, action)
    if "/" not in ref:
        err("%s: non-absolute URLs should be in form of repo_name/path_to_chart, got: %s"
            % (action, ref))
    repo, _, chart = ref.partition("/")
    r = next((x for x in load_repos(opts) if x["name"] == repo), None)
    if r is None:
        err("%s: repo %s not found" % (action, repo))
    cat = catalog_for(r["url"])
    want = opts.get("version", "")
    if cat is None:
        return (ref,) + from_index(opts, r, chart, want, action)
    if chart not in cat:
        err("%s: chart \"%s\" matching %s not found in %s index. (try 'helm repo update'): no "
            "chart name found" % (action, chart, want, repo))
    versions = cat[chart]
    if want:
        norm = want.lstrip("v")
        match = [v for v in versions if v.lstrip("v") == norm or
                 v.lstrip("v").startswith(norm.rstrip("*").rstrip("x").rstrip("."))]
        if not match:
            err("%s: chart \"%s\" matching %s not found in %s index. (try 'helm repo update'): "
                "no chart version found for %s-%s" % (action, chart, want, repo, chart, want))
        return ref, chart, match[0], match[0]
    return ref, chart, versions[0], versions[0]


def client_or_die(opts, action_prefix=""):
    c, kc = kl.admin_client(opts.get("kubeconfig"), timeout=30)
    if c is None:
        err("%sKubernetes cluster unreachable: Get \"http://localhost:8080/version\": dial tcp "
            "127.0.0.1:8080: connect: connection refused" % action_prefix)
    try:
        c.get("/version")
    except kl.ConnError as e:
        err("%sKubernetes cluster unreachable: Get \"%s/version\": %s"
            % (action_prefix, kc.server, e.dial()))
    except kl.ApiError as e:
        err("%sKubernetes cluster unreachable: %s" % (action_prefix, e))
    return c


def call(c, method, path, body=None, prefix=""):
    try:
        return c.request(method, path, body), None
    except kl.ConnError as e:
        err("%sKubernetes cluster unreachable: %s" % (prefix, e.dial()))
    except kl.ApiError as e:
        return None, e
    return None, None


def release_ready(c, rel):
    """helm --wait: the chart's own Deployments/DaemonSets have ready pods."""
    if rel["chartName"] != "gpu-operator":
        return True
    pods, e = call(c, "GET", "/api/v1/namespaces/%s/pods" % rel["namespace"])
    if e:
        return False
    mine = [p for p in pods["items"] if p["metadata"]["name"].startswith(
        ("gpu-operator-", rel["name"] + "-node-feature-discovery-"))]
    return bool(mine) and all(
        p["status"]["phase"] == "Running" and
        all(cs.get("ready") for cs in p["status"].get("containerStatuses") or [])
        for p in mine)


def print_release(rel):
    print("NAME: %s" % rel["name"])
    print("LAST DEPLOYED: %s" % time.strftime("%a %b %e %H:%M:%S %Y",
                                              time.localtime(rel["updated"])))
    print("NAMESPACE: %s" % rel["namespace"])
    print("STATUS: %s" % rel["status"])
    print("REVISION: %d" % rel["revision"])
    print("TEST SUITE: None")


def cmd_install(args, opts, upgrade=False):
    install = not upgrade or opts.get("install")
    action = "UPGRADE FAILED" if upgrade else "INSTALLATION FAILED"
    if upgrade:
        if len(args) < 2:
            err("\"helm upgrade\" requires 2 arguments\n\nUsage:  helm upgrade [RELEASE] [CHART] "
                "[flags]")
        name, chart_ref = args[0], args[1]
    else:
        if len(args) < 2:
            err("%s: must either provide a name or specify --generate-name" % action)
        name, chart_ref = args[0], args[1]
    ref, chart, cver, appver = resolve_chart(chart_ref, opts, action)
    if not re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", name) or len(name) > 53:
        err("%s: release name \"%s\": invalid release name, must match regex "
            "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ and the length "
            "must not be longer than 53" % (action, name))
    ns = opts.get("namespace") or "default"
    values = user_values(opts)
    c = client_or_die(opts, action + ": ")
    old, _ = call(c, "GET", "/gpuctl-lab/v1/releases/%s/%s" % (ns, name))
    mode = "install"
    if upgrade:
        mode = "upgrade" if old or not install else "install"
        if old is None and install:
            print("Release \"%s\" does not exist. Installing it now." % name)
    if opts.get("create-namespace") and install:
        _, e = call(c, "POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        if e and e.code != 409:
            err("%s: %s" % (action, e))
    rel, e = call(c, "POST", "/gpuctl-lab/v1/releases", {
        "name": name, "namespace": ns, "chart": ref, "chartName": chart, "chartVersion": cver,
        "appVersion": appver, "values": values, "mode": mode})
    if e:
        if e.code == 404 and "namespaces" in str(e):
            err("%s: create: failed to create: %s" % (action, e))
        err("%s: %s" % (action, e))
    if opts.get("wait"):
        try:
            timeout = kl.parse_duration(opts.get("timeout", "5m0s"))
        except ValueError as ex:
            err("invalid argument \"%s\" for \"--timeout\" flag: %s" % (opts.get("timeout"), ex))
        deadline = time.time() + timeout
        while not release_ready(c, rel):
            if time.time() >= deadline:
                desc = "Release \"%s\" failed: context deadline exceeded" % name
                call(c, "PATCH", "/gpuctl-lab/v1/releases/%s/%s" % (ns, name),
                     {"status": "failed", "description": desc})
                err("%s: context deadline exceeded" % action)
            time.sleep(min(1.0, max(0.05, deadline - time.time())))
    if upgrade and old:
        print("Release \"%s\" has been upgraded. Happy Helming!" % name)
    print_release(rel)
    return 0


def fmt_updated(t):
    frac = int((t % 1) * 1e9)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + ".%09d +0000 UTC" % frac


def cmd_list(args, opts):
    c = client_or_die(opts)
    rels, e = call(c, "GET", "/gpuctl-lab/v1/releases")
    if e:
        err(str(e))
    rels = rels["releases"]
    if not opts.get("all-namespaces"):
        ns = opts.get("namespace") or "default"
        rels = [r for r in rels if r["namespace"] == ns]
    # What helm list shows without --all.
    rels = [r for r in rels if r["status"] in ("deployed", "failed")]
    rels.sort(key=lambda r: r["name"])
    fmt = opts.get("output", "table")
    if opts.get("short"):
        for r in rels:
            print(r["name"])
        return 0
    rows = [{"name": r["name"], "namespace": r["namespace"], "revision": str(r["revision"]),
             "updated": fmt_updated(r["updated"]), "status": r["status"],
             "chart": "%s-%s" % (r["chartName"], r["chartVersion"]),
             "app_version": r["appVersion"]} for r in rels]
    if fmt == "json":
        print(json.dumps(rows, separators=(",", ":")))
    else:
        sys.stdout.write(kl.uitable([["NAME", "NAMESPACE", "REVISION", "UPDATED", "STATUS",
                                      "CHART", "APP VERSION"]] +
                                    [[r["name"], r["namespace"], r["revision"], r["updated"],
                                      r["status"], r["chart"], r["app_version"]] for r in rows]))
    return 0


def get_release(c, opts, name, prefix=""):
    ns = opts.get("namespace") or "default"
    rel, e = call(c, "GET", "/gpuctl-lab/v1/releases/%s/%s" % (ns, name))
    if e:
        err(prefix + "release: not found")
    return rel


def cmd_status(args, opts):
    if not args:
        err("\"helm status\" requires 1 argument\n\nUsage:  helm status RELEASE_NAME [flags]")
    c = client_or_die(opts)
    rel = get_release(c, opts, args[0])
    fmt = opts.get("output", "table")
    if fmt == "json":
        obj = {"name": rel["name"], "namespace": rel["namespace"], "version": rel["revision"],
               "info": {"status": rel["status"], "description": rel["description"],
                        "first_deployed": kl.rfc3339(rel["firstDeployed"]),
                        "last_deployed": kl.rfc3339(rel["updated"])},
               "chart": {"metadata": {"name": rel["chartName"], "version": rel["chartVersion"],
                                      "appVersion": rel["appVersion"]}},
               "config": rel["values"]}
        print(json.dumps(obj, separators=(",", ":")))
        return 0
    print_release(rel)
    return 0


def cmd_get(args, opts):
    if len(args) < 2 or args[0] != "values":
        err("gpuctl lab helm: only 'helm get values RELEASE' is implemented")
    c = client_or_die(opts)
    rel = get_release(c, opts, args[1])
    fmt = opts.get("output", "table")
    vals = rel["values"]
    if fmt == "json":
        print(json.dumps(vals or None, separators=(",", ":"), sort_keys=True))
    else:
        print("USER-SUPPLIED VALUES:")
        sys.stdout.write(kl.dump_yaml(vals) if vals else "null\n")
    return 0


def cmd_version(args, opts):
    v, commit, gover = VERSION
    if opts.get("short"):
        print("%s+g%s" % (v, commit[:7]))
        return 0
    print("version.BuildInfo{Version:\"%s\", GitCommit:\"%s\", GitTreeState:\"clean\", "
          "GoVersion:\"%s\"}" % (v, commit, gover))
    return 0


def main(argv):
    try:
        opts, pos, _ = kl.parse_flags(argv, SPEC, ALIASES)
    except kl.UsageError as e:
        err(str(e))
    if not pos:
        print("The Kubernetes package manager (gpuctl lab stand-in)\n\nUsage:\n  helm [command]")
        return 0
    verb, args = pos[0], pos[1:]
    if verb == "version":
        return cmd_version(args, opts)
    if verb == "repo":
        return cmd_repo(args, opts)
    if verb == "install":
        return cmd_install(args, opts)
    if verb == "upgrade":
        return cmd_install(args, opts, upgrade=True)
    if verb in ("list", "ls"):
        return cmd_list(args, opts)
    if verb == "status":
        return cmd_status(args, opts)
    if verb == "get":
        return cmd_get(args, opts)
    err("unknown command \"%s\" for \"helm\"\nRun 'helm --help' for usage." % verb)
    return 1


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # die quietly on a closed pipe, as Go tools do
    sys.exit(main(sys.argv[1:]))
