"""Just enough YAML for the Kubernetes stand-ins (stdlib has no YAML).

load_all(text) -> list of documents; load(text) -> first document;
dump(obj) -> text in the style kubectl/helm print (sorted keys, 2-space
indent, sequences not indented under their key, "{}"/"[]" for empties).

Supported input: block mappings and sequences (including "- key: v" items),
plain/single/double-quoted scalars, block scalars (| |- |+ > >-), comments,
"---" document separators, and simple flow collections ({a: b}, [x, "y"]).
Anchors, aliases, tags and multi-line plain scalars are not supported; this
is enough for kubeconfigs, Kubernetes manifests (flannel's included), kubeadm
config files and helm values files.
"""
import json
import re

_KEY_RE = re.compile(
    r'^("(?:[^"\\]|\\.)*"|\'(?:[^\']|\'\')*\'|[^\s#\'"{\[\-?:][^#]*?|-[^\s#][^#]*?)\s*:(?:\s+|$)(.*)$')


class YAMLError(ValueError):
    pass


def _strip_comment(s):
    """Remove a trailing ' # comment' that is outside quotes."""
    quote = None
    for i, ch in enumerate(s):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'" and (i == 0 or s[i - 1] in " \t:[{,"):
            quote = ch
        elif ch == "#" and (i == 0 or s[i - 1] in " \t"):
            return s[:i].rstrip()
    return s.rstrip()


def _unquote_key(k):
    if k.startswith('"'):
        return json.loads(k)
    if k.startswith("'"):
        return k[1:-1].replace("''", "'")
    return k


def scalar(s):
    """Resolve a plain or quoted scalar (YAML 1.2 core schema, as sigs.k8s.io/yaml)."""
    s = s.strip()
    if s == "":
        return None
    if s[0] == '"':
        try:
            return json.loads(s)
        except ValueError as e:
            raise YAMLError("bad double-quoted scalar: %s" % s) from e
    if s[0] == "'":
        if not s.endswith("'") or len(s) < 2:
            raise YAMLError("bad single-quoted scalar: %s" % s)
        return s[1:-1].replace("''", "'")
    if s[0] in "{[":
        return _Flow(s).parse()
    if s in ("~", "null", "Null", "NULL"):
        return None
    if s in ("true", "True", "TRUE"):
        return True
    if s in ("false", "False", "FALSE"):
        return False
    if re.fullmatch(r"[-+]?[0-9]+", s):
        return int(s)
    if re.fullmatch(r"0x[0-9a-fA-F]+", s):
        return int(s, 16)
    if re.fullmatch(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?", s):
        return float(s)
    return s


class _Flow:
    """Parser for flow collections: {a: 1, b: [x, "y"]}."""

    def __init__(self, s):
        self.s, self.i = s, 0

    def parse(self):
        v = self._value()
        self._ws()
        if self.i != len(self.s):
            raise YAMLError("trailing text in flow collection: %s" % self.s)
        return v

    def _ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t\n":
            self.i += 1

    def _value(self):
        self._ws()
        c = self.s[self.i:self.i + 1]
        if c == "{":
            self.i += 1
            out = {}
            while True:
                self._ws()
                if self.s[self.i:self.i + 1] == "}":
                    self.i += 1
                    return out
                k = self._atom(":,}")
                self._ws()
                v = None
                if self.s[self.i:self.i + 1] == ":":
                    self.i += 1
                    v = self._value()
                out[str(k)] = v
                self._ws()
                if self.s[self.i:self.i + 1] == ",":
                    self.i += 1
        if c == "[":
            self.i += 1
            out = []
            while True:
                self._ws()
                if self.s[self.i:self.i + 1] == "]":
                    self.i += 1
                    return out
                out.append(self._value())
                self._ws()
                if self.s[self.i:self.i + 1] == ",":
                    self.i += 1
        if not c:
            raise YAMLError("unterminated flow collection")
        return self._atom(",]}")

    def _atom(self, stops):
        self._ws()
        c = self.s[self.i:self.i + 1]
        if c in "\"'":
            j = self.i + 1
            while j < len(self.s):
                if c == '"' and self.s[j] == "\\":
                    j += 2
                    continue
                if self.s[j] == c:
                    if c == "'" and self.s[j + 1:j + 2] == "'":
                        j += 2
                        continue
                    break
                j += 1
            tok = self.s[self.i:j + 1]
            self.i = j + 1
            return scalar(tok)
        if c in "{[":
            return self._value()
        j = self.i
        while j < len(self.s) and self.s[j] not in stops:
            if self.s[j] == ":" and ":" in stops and self.s[j + 1:j + 2] not in (" ", ""):
                j += 1
                continue
            j += 1
        tok = self.s[self.i:j]
        self.i = j
        return scalar(tok)


class _Parser:
    def __init__(self, lines):
        self.lines = lines

    def _next(self, i):
        """Index of the next line holding content (skips blanks and comments)."""
        while i < len(self.lines):
            t = self.lines[i].strip()
            if t and not t.startswith("#"):
                return i
            i += 1
        return i

    @staticmethod
    def _indent(line):
        return len(line) - len(line.lstrip(" "))

    def block(self, i, min_indent):
        i = self._next(i)
        if i >= len(self.lines):
            return None, i
        line = self.lines[i]
        ind = self._indent(line)
        if ind < min_indent:
            return None, i
        body = line[ind:]
        if body == "-" or body.startswith("- "):
            return self.seq(i, ind)
        if _KEY_RE.match(_strip_comment(body)):
            return self.mapping(i, ind)
        text = _strip_comment(body)
        if text[:1] in "|>":
            return self.block_scalar(i + 1, ind - 1, text)
        return scalar(text), i + 1

    def seq(self, i, ind):
        out = []
        while True:
            i = self._next(i)
            if i >= len(self.lines):
                break
            line = self.lines[i]
            if self._indent(line) != ind:
                break
            body = line[ind:]
            if not (body == "-" or body.startswith("- ")):
                break
            rest = body[1:]
            if rest.strip() == "" or rest.strip().startswith("#"):
                v, i = self.block(i + 1, ind + 1)
                out.append(v)
                continue
            col = ind + 1 + (len(rest) - len(rest.lstrip(" ")))
            # Re-read the item's content as if it started on its own line.
            self.lines[i] = " " * col + rest.lstrip(" ")
            v, i = self.block(i, col)
            out.append(v)
        return out, i

    def mapping(self, i, ind):
        out = {}
        while True:
            i = self._next(i)
            if i >= len(self.lines):
                break
            line = self.lines[i]
            if self._indent(line) != ind:
                if self._indent(line) > ind:
                    raise YAMLError("line %d: unexpected indentation" % (i + 1))
                break
            body = _strip_comment(line[ind:])
            m = _KEY_RE.match(body)
            if not m:
                break
            key = _unquote_key(m.group(1).strip())
            rest = m.group(2).strip()
            if rest == "":
                j = self._next(i + 1)
                if j < len(self.lines) and self._indent(self.lines[j]) == ind and \
                        (self.lines[j][ind:] == "-" or self.lines[j][ind:].startswith("- ")):
                    v, i = self.seq(j, ind)
                else:
                    v, i = self.block(i + 1, ind + 1)
            elif rest[0] in "|>":
                v, i = self.block_scalar(i + 1, ind, rest)
            else:
                v, i = scalar(rest), i + 1
            out[key] = v
        return out, i

    def block_scalar(self, i, parent_ind, header):
        style, chomp = header[0], "clip"
        if "-" in header:
            chomp = "strip"
        elif "+" in header:
            chomp = "keep"
        raw = []
        block_ind = None
        while i < len(self.lines):
            line = self.lines[i]
            if line.strip() == "":
                raw.append("")
                i += 1
                continue
            ind = self._indent(line)
            if block_ind is None:
                if ind <= parent_ind:
                    break
                block_ind = ind
            if ind < block_ind:
                break
            raw.append(line[block_ind:])
            i += 1
        # Trailing blank lines belong to chomping, not to the following content.
        body_end = len(raw)
        while body_end and raw[body_end - 1] == "":
            body_end -= 1
        trailing = len(raw) - body_end
        body = raw[:body_end]
        if style == "|":
            text = "\n".join(body)
        else:
            text, prev_blank = "", True
            for ln in body:
                if ln == "":
                    text += "\n"
                    prev_blank = True
                elif ln.startswith(" "):
                    text += ("\n" if text and not text.endswith("\n") else "") + ln
                    prev_blank = True
                else:
                    text += ("" if prev_blank else " ") + ln
                    prev_blank = False
        if chomp == "strip" or not body:
            return text, i
        if chomp == "keep":
            return text + "\n" * (1 + trailing), i
        return text + "\n", i


def _documents(text):
    doc = []
    for line in text.replace("\r\n", "\n").replace("\t", "    ").split("\n"):
        if re.match(r"^---(\s|$)", line):
            yield doc
            doc = []
            rest = line[3:].strip()
            if rest and not rest.startswith("#"):
                doc.append(rest)
        elif line.rstrip() == "...":
            yield doc
            doc = []
        elif line.startswith("%") and not doc:
            continue
        else:
            doc.append(line)
    yield doc


def load_all(text):
    docs = []
    for lines in _documents(text):
        p = _Parser(lines)
        v, i = p.block(0, 0)
        i = p._next(i)
        if i < len(lines):
            raise YAMLError("line %d: cannot parse %r" % (i + 1, lines[i].strip()))
        if v is not None:
            docs.append(v)
    return docs


def load(text):
    docs = load_all(text)
    return docs[0] if docs else None


# ---------------------------------------------------------------- dumping

_PLAIN_OK = re.compile(r"^[A-Za-z0-9_./-][A-Za-z0-9_./ ,()@=+\-:]*$")


def _needs_quote(s):
    if s == "" or s != s.strip() or "\n" in s:
        return True
    if s[0] in "{}[]'\"&*!|>%@`#,?:" or s == "-" or s.startswith("- "):
        return True
    if not isinstance(scalar(s), str):
        return True
    if re.match(r"^\d{4}-\d\d?-\d\d?([Tt ]|$)", s):  # YAML 1.1 timestamps
        return True
    if s.lower() in ("y", "n", "yes", "no", "on", "off"):
        return True
    if ": " in s or " #" in s or s.endswith(":"):
        return True
    return not _PLAIN_OK.match(s)


def _scalar_text(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    s = str(v)
    if _needs_quote(s):
        return json.dumps(s)
    return s


def _dump(v, ind, out):
    pad = " " * ind
    if isinstance(v, dict):
        for k in sorted(v, key=str):
            item = v[k]
            key = _scalar_text(str(k))
            if isinstance(item, dict) and item:
                out.append("%s%s:" % (pad, key))
                _dump(item, ind + 2, out)
            elif isinstance(item, list) and item:
                out.append("%s%s:" % (pad, key))
                _dump(item, ind, out)
            elif isinstance(item, str) and "\n" in item.rstrip("\n"):
                chomp = "" if item.endswith("\n") else "-"
                out.append("%s%s: |%s" % (pad, key, chomp))
                for ln in item.rstrip("\n").split("\n"):
                    out.append(("%s  %s" % (pad, ln)).rstrip())
            else:
                out.append("%s%s: %s" % (pad, key, _inline(item)))
    elif isinstance(v, list):
        for item in v:
            if isinstance(item, (dict, list)) and item:
                sub = []
                _dump(item, ind + 2, sub)
                sub[0] = pad + "- " + sub[0][ind + 2:]
                out.extend(sub)
            else:
                out.append("%s- %s" % (pad, _inline(item)))
    else:
        out.append(pad + _inline(v))


def _inline(v):
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, list):
        return "[]"
    return _scalar_text(v)


def dump(obj):
    out = []
    _dump(obj, 0, out)
    return "\n".join(out) + "\n"
