"""The subset of Kubernetes JSONPath that gpuctl's steps and the lab's tests
pass to kubectl -o jsonpath.

Supported: literal text, {.a.b}, {$.a}, escaped dots (nvidia\\.com/gpu), [*],
[?(@.x=="y")], {range X}...{end} (nested), {"\\t"} string literals, and several
results joined by spaces. Missing keys print nothing (kubectl's default
--allow-missing-template-keys=true). Any other syntax is a JSONPathError, so a
step that starts using it fails in the lab rather than printing a guess.
"""
import json


class JSONPathError(ValueError):
    pass


def _find_close(s, i, open_ch, close_ch):
    depth, quote = 0, None
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise JSONPathError("unclosed %s" % open_ch)


def parse_template(t):
    """-> list of nodes: ("text", s) | ("path", segs, from_root) | ("range", path, body)."""
    nodes, stack = [], []
    cur = nodes
    i = 0
    while i < len(t):
        j = t.find("{", i)
        if j < 0:
            cur.append(("text", t[i:]))
            break
        if j > i:
            cur.append(("text", t[i:j]))
        k = _find_close(t, j, "{", "}")
        expr = t[j + 1:k].strip()
        i = k + 1
        if expr.startswith("range ") or expr == "range":
            node = ("range", parse_path(expr[5:].strip()), [])
            cur.append(node)
            stack.append(cur)
            cur = node[2]
        elif expr == "end":
            if not stack:
                raise JSONPathError("not in range, nothing to end")
            cur = stack.pop()
        elif expr[:1] in "\"'":
            cur.append(("text", _unquote(expr)))
        else:
            cur.append(("path",) + parse_path(expr))
    if stack:
        raise JSONPathError("unclosed action")
    return nodes


def _unquote(s):
    if s[0] == '"':
        try:
            return json.loads(s)
        except ValueError as e:
            raise JSONPathError("invalid string literal %s" % s) from e
    return s[1:-1]


def parse_path(s):
    """-> (segments, from_root)."""
    from_root = s.startswith("$")
    i = 1 if s[:1] in "$@" else 0
    segs = []
    while i < len(s):
        c = s[i]
        if c == ".":
            if s[i + 1:i + 2] == ".":
                raise JSONPathError("recursive descent (..) is not supported by the lab")
            i += 1
            continue
        if c == "[":
            k = _find_close(s, i, "[", "]")
            inner = s[i + 1:k].strip()
            i = k + 1
            if inner == "*":
                segs.append(("all",))
            elif inner.startswith("?(") and inner.endswith(")"):
                segs.append(("filter", _parse_filter(inner[2:-1].strip())))
            else:
                raise JSONPathError("[%s] is not supported by the lab" % inner)
            continue
        name = []
        while i < len(s) and s[i] not in ".[":
            if s[i] == "\\" and i + 1 < len(s):
                name.append(s[i + 1])
                i += 2
                continue
            name.append(s[i])
            i += 1
        n = "".join(name).strip()
        segs.append(("all",) if n == "*" else ("field", n))
    return segs, from_root


def _parse_filter(expr):
    """@.path=="value" -> (path, value): the one filter the steps use."""
    left, eq, right = expr.partition("==")
    right = right.strip()
    if not eq or right[:1] not in "\"'":
        raise JSONPathError("filter %s is not supported by the lab (only @.x==\"y\")" % expr)
    return parse_path(left.strip()), _unquote(right)


def evaluate(segs, values):
    for seg in segs:
        nxt = []
        kind = seg[0]
        for v in values:
            if kind == "field":
                if isinstance(v, dict) and seg[1] in v:
                    nxt.append(v[seg[1]])
            elif kind == "all":
                if isinstance(v, list):
                    nxt.extend(v)
                elif isinstance(v, dict):
                    nxt.extend(v[k] for k in sorted(v))
            elif kind == "filter":
                if isinstance(v, list):
                    nxt.extend(x for x in v if _match(seg[1], x))
        values = nxt
    return values


def _match(flt, item):
    """kubectl compares a filter's operand as text (booleans as true/false)."""
    (segs, _), want = flt
    got = evaluate(segs, [item])
    return bool(got) and fmt(got[0]) == want


def fmt(v):
    if isinstance(v, str):
        return v
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def render(nodes, root, cur=None):
    cur = root if cur is None else cur
    out = []
    for n in nodes:
        if n[0] == "text":
            out.append(n[1])
        elif n[0] == "path":
            vals = evaluate(n[1], [root if n[2] else cur])
            out.append(" ".join(fmt(v) for v in vals))
        else:
            (segs, from_root), body = n[1], n[2]
            for v in evaluate(segs, [root if from_root else cur]):
                out.append(render(body, root, v))
    return "".join(out)


def execute(template, obj):
    return render(parse_template(template), obj)
