#!/usr/bin/python3
"""gpuctl-lab up --from: a lab that mirrors a site's inventory (docs/lab.md).

  from-inventory.py table INVENTORY NET
      prints the lab's node table (state/nodes.tsv, format in common.sh) for
      the inventory's nodes, with addresses NET.10, NET.11, ... in the
      inventory's order; exits 1 naming the node when the lab cannot build
      its OS or hardware.
  from-inventory.py write INVENTORY STATE NET SOURCES
      writes STATE/inventory.yaml (the site's inventory with what the lab
      must change rewritten) and STATE/address-map.tsv (node, site address,
      lab address). SOURCES: the lab's repositories/mirrors block (YAML).

Node ranges (`name: gpu[01-16]`, with `address: 10.0.0.[11-26]` or a first
address that is counted up) and `node_defaults:` are expanded here, with
python3-yaml; the written inventory lists every node on its own.
"""
import copy
import ipaddress
import re
import sys

import yaml

# What disk.sh can build (os_release, disk_ubuntu, disk_rocky).
LAB_OSES = ("ubuntu-22.04", "rocky-9")
# nvidia-smi's memory.total of the models the lab knows, MiB per GPU.
GPU_MIB = {"NVIDIA A100-SXM4-80GB": 81920, "NVIDIA H100 80GB HBM3": 81559}
# ssh settings that point at the site (who, where, through what, trusting
# which keys): the lab replaces them with its own.
SITE_SSH_KEYS = ("user", "port", "identity_file", "become", "become_password_env",
                 "jump_host", "known_hosts")
RANGE = re.compile(r"^(.*)\[(\d+)-(\d+)\](.*)$")


def fail(message):
    sys.stderr.write("gpuctl-lab: error: %s\n" % message)
    sys.exit(1)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        fail("--from %s: %s" % (path, e))
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) or not doc["nodes"]:
        fail("--from %s: not an inventory (no nodes: list)" % path)
    return doc


def merge(base, over):
    """node_defaults under a node: mappings merge key by key, the node wins
    (an empty mapping too: `hardware: {}` means none); the node's keys first."""
    out = {}
    for k, v in over.items():
        if isinstance(v, dict) and v and isinstance(base.get(k), dict):
            out[k] = merge(base[k], v)
        else:
            out[k] = copy.deepcopy(v)
    for k, v in base.items():
        if k not in out:
            out[k] = copy.deepcopy(v)
    return out


def expand_range(text):
    m = RANGE.match(str(text))
    if not m:
        return None
    lo, hi = m.group(2), m.group(3)
    width = len(lo) if lo.startswith("0") else 1
    if int(hi) < int(lo):
        fail("range %s: %s is below %s" % (text, hi, lo))
    return ["%s%0*d%s" % (m.group(1), width, i, m.group(4)) for i in range(int(lo), int(hi) + 1)]


def expand(doc):
    """The inventory's nodes, one mapping each (ranges and node_defaults applied)."""
    defaults = doc.get("node_defaults") or {}
    nodes = []
    for i, raw in enumerate(doc["nodes"]):
        if not isinstance(raw, dict) or "name" not in raw:
            fail("nodes[%d]: no name" % i)
        node = merge(defaults, raw)
        names = expand_range(node["name"])
        if names is None:
            nodes.append(node)
            continue
        addr = node.get("address")
        addrs = expand_range(addr) if addr is not None else None
        if addrs is None and addr is not None:
            try:
                first = ipaddress.ip_address(str(addr))
                addrs = [str(first + k) for k in range(len(names))]
            except ValueError:
                fail("node %s: a range's address must be a range or an IP address, not %s"
                     % (node["name"], addr))
        if addrs is not None and len(addrs) != len(names):
            fail("node %s: %d names but %d addresses" % (node["name"], len(names), len(addrs)))
        for k, name in enumerate(names):
            one = copy.deepcopy(node)
            one["name"] = name
            if addrs is not None:
                one["address"] = addrs[k]
            nodes.append(one)
    seen = set()
    for node in nodes:
        if node["name"] in seen:
            fail("node %s is declared twice" % node["name"])
        seen.add(node["name"])
    if len(nodes) > 240:
        fail("%d nodes: a lab holds at most 240" % len(nodes))
    return nodes


def gpu_mib(model):
    if model in GPU_MIB:
        return GPU_MIB[model]
    m = re.search(r"(\d+)\s*GB", model)
    return int(m.group(1)) * 1024 if m else 81920


def table(path, net):
    for i, node in enumerate(expand(load(path))):
        name = str(node["name"])
        osname = str(node.get("os", "auto"))
        if osname == "auto":
            osname = LAB_OSES[0]
        if osname not in LAB_OSES:
            fail("node %s: os %s is not one the lab can build (it offers %s)"
                 % (name, osname, ", ".join(LAB_OSES)))
        roles = node.get("roles") or []
        if isinstance(roles, str):
            roles = [roles]
        hw = node.get("hardware") or {}
        gpus = hw.get("gpus") or {}
        model = count = mib = "-"
        nvswitch = "1" if gpus and gpus.get("nvswitch") is True else "-"
        if gpus:
            model, count = str(gpus.get("model", "")), gpus.get("count", 0)
            if not model or not isinstance(count, int) or count < 1:
                fail("node %s: hardware.gpus wants a model and a count" % name)
            mib = gpu_mib(model)
        ports = []
        for p in hw.get("ib") or []:
            dev = str(p.get("device", ""))
            if not re.match(r"^[A-Za-z][A-Za-z0-9_.-]*$", dev):
                fail("node %s: hardware.ib device %r" % (name, dev))
            ports.append("%s:%s:%s:Active" % (dev, p.get("port", 1), p.get("rate") or 200))
        print("\t".join(str(x) for x in (
            name, "%s.%d" % (net, 10 + i), osname, ",".join(str(r) for r in roles) or "-",
            model, count, mib, " ".join(ports) or "-", "-", nvswitch)))


def strip_ssh(ssh):
    return {k: v for k, v in (ssh or {}).items() if k not in SITE_SSH_KEYS}


def write(path, state, net, sources):
    doc = load(path)
    nodes = expand(doc)
    lab = {}
    with open(state + "/nodes.tsv", encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            lab[fields[0]] = fields[1]
    out = {}
    for k, v in doc.items():
        if k == "node_defaults":
            continue  # merged into every node below
        out[k] = v
    ssh = strip_ssh(doc.get("ssh"))
    ssh.update({"user": "root", "identity_file": state + "/ssh/id_ed25519",
                "known_hosts": state + "/known_hosts"})
    out["ssh"] = ssh
    network = dict(doc.get("network") or {})
    network["subnet"] = net + ".0/24"
    out["network"] = network
    # The site's package mirrors are out of the lab's reach: the lab's own
    # (signed the same way) take their place.
    src = yaml.safe_load(sources) or {}
    for k in ("repositories", "mirrors"):
        if k in src:
            out[k] = src[k]
    rows = []
    new_nodes = []
    for node in nodes:
        node = dict(node)
        name = str(node["name"])
        site = node.get("address", "-")
        node["address"] = lab[name]
        if "ssh" in node:
            rest = strip_ssh(node["ssh"])
            if rest:
                node["ssh"] = rest
            else:
                del node["ssh"]
        new_nodes.append(node)
        rows.append("%s\t%s\t%s\n" % (name, site, lab[name]))
    out["nodes"] = new_nodes
    head = ("# Written by 'gpuctl-lab up --from %s': the site's inventory with the\n"
            "# addresses (address-map.tsv), ssh and package sources the lab needs.\n" % path)
    with open(state + "/inventory.yaml.tmp", "w", encoding="utf-8") as f:
        f.write(head)
        yaml.safe_dump(out, f, sort_keys=False, default_flow_style=False, width=100)
    with open(state + "/address-map.tsv.tmp", "w", encoding="utf-8") as f:
        f.write("# node\tsite_address\tlab_address\n")
        f.writelines(rows)


def main(argv):
    if len(argv) == 4 and argv[1] == "table":
        table(argv[2], argv[3])
    elif len(argv) == 6 and argv[1] == "write":
        write(argv[2], argv[3], argv[4], argv[5])
    else:
        fail("usage: from-inventory.py table INV NET | write INV STATE NET SOURCES")


if __name__ == "__main__":
    main(sys.argv)
