#!/usr/bin/env python3
"""List, relation, attribute and comparison questions over the Python 3.11 HTML docs (Debian package
python3.11-doc), with gold items read from the docs' own Sphinx HTML structure — never from kgagent's triples:

- list:       the <dl class="py function|exception|class"> entries of a module page (their dt ids), the
              <dl class="py method"> entries nested in a class's <dd>; with a restriction ("for copying"), the
              functions whose description starts with that verb;
- relation:   the py-exc cross-references in an entry's own <dd> (not in "Changed in version" notes nor nested
              entries) for "what does X raise"; the module prefix of a dt id for "which module is X in"; the
              xref after "Subclass of" for "what is X a subclass of"; the sig-param names for "what arguments";
- attribute:  the <span class="default_value"> of a parameter; the "New in version" and "Deprecated since
              version" notes (div.versionadded / div.versiondeprecated) directly in an entry's <dd>;
- comparison: two functions of one module whose names differ only by a suffix (dump/dumps): both named.

Which entries are asked about is chosen by a hash of their ids (no hand picking), and each shape is worded in
several ways a user would write it, chosen the same way. gold_items are the names a good answer must contain (a
dotted id counts when its last part is named); gold_page is the page that holds the answer.
Usage: graph_questions.py [DOCROOT] > graph_pydocs.jsonl"""
import hashlib, html.parser, json, os, re, subprocess, sys

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.kids = tag, dict(attrs), parent, []

    def cls(self):
        return (self.attrs.get("class") or "").split()

    def text(self):
        return "".join(k if isinstance(k, str) else k.text() for k in self.kids)

    def elems(self):
        return [k for k in self.kids if isinstance(k, Node)]

    def walk(self, skip=None):
        for k in self.elems():
            if skip and skip(k):
                continue
            yield k
            yield from k.walk(skip)


class Builder(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("root", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.kids.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.kids.append(data)


def parse(path):
    b = Builder()
    b.feed(open(path, encoding="utf-8").read())
    return b.root


def docroot(package, marker):
    files = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True).stdout.split()
    hit = next(f for f in files if f.endswith(marker))
    return hit[: -len(marker)] + "/html"


def h(s):
    return int(hashlib.sha256(s.encode()).hexdigest()[:8], 16)


def ws(s):
    return re.sub(r"\s+", " ", s).strip()


class Entry:
    """One Sphinx API entry: <dl class="py KIND"><dt id=...>...</dt><dd>...</dd></dl>."""

    def __init__(self, dl, page):
        self.kind = [c for c in dl.cls() if c != "py"][0]
        kids = dl.elems()
        self.dt = next(k for k in kids if k.tag == "dt")
        self.dd = next((k for k in kids if k.tag == "dd"), Node("dd", {}, None))
        self.id = self.dt.attrs.get("id", "")
        self.page = page

    def own(self):
        """The <dd>'s nodes, nested entries and version notes left out."""
        return self.dd.walk(skip=lambda n: n.tag == "dl" and "py" in n.cls() or n.tag == "div" and any(
            c in ("versionchanged", "versionadded", "deprecated", "deprecated-removed") for c in n.cls()))

    def first_sentence(self):
        p = next((k for k in self.dd.elems() if k.tag == "p"), None)
        if p is None:
            return ""
        t = ws(p.text())
        m = re.match(r"(.+?[.!?])(\s|$)", t)
        return m.group(1) if m else t

    def params(self):
        out = []
        for em in self.dt.walk():
            if em.tag == "em" and "sig-param" in em.cls():
                name = next((ws(n.text()) for n in em.walk() if n.tag == "span" and "n" in n.cls()), "")
                default = next((ws(n.text()) for n in em.walk() if n.tag == "span" and "default_value" in n.cls()), None)
                if name and name not in ("*", "/"):
                    out.append((name.lstrip("*"), default))
        return out

    def raises(self):
        out = []
        for n in self.own():
            if n.tag == "code" and "py-exc" in n.cls():
                name = ws(n.text()).lstrip("~")
                if name and name not in out:
                    out.append(name)
        return out

    def version(self, cls):
        """The version of a version note directly in the <dd>; for "New in version", only a bare note (one
        that dates the entry, not "New in version 3.8: the dirs_exist_ok parameter")."""
        for d in self.dd.elems():
            if d.tag == "div" and cls in d.cls():
                t = ws(d.text())
                m = re.search(r"version (\d+\.\d+)", t)
                if m and (cls != "versionadded" or t[m.end():].strip(" .") == ""):
                    return m.group(1)
        return None

    def subclass_of(self):
        p = next((k for k in self.dd.elems() if k.tag == "p"), None)
        if p is None:
            return None
        seen_word = False
        for k in p.kids:
            if isinstance(k, str):
                if re.search(r"\b[Ss]ubclass of\s*$", k) or re.search(r"\b[Ss]ubclass of\b", k):
                    seen_word = True
                continue
            if seen_word:
                code = next((n for n in [k] + list(k.walk()) if n.tag == "code" and ("py-exc" in n.cls() or "py-class" in n.cls())), None)
                if code is not None:
                    return ws(code.text())
                return None
        return None


def entries(root, page):
    out = []
    for dl in root.walk():
        if dl.tag == "dl" and "py" in dl.cls() and len(dl.cls()) == 2:
            e = Entry(dl, page)
            if e.id:
                e.parent = dl.parent
                out.append(e)
    return out


def last(i):
    return i.rsplit(".", 1)[-1]


def gerund(v):
    if len(v) <= 4 and re.fullmatch(r"[^aeiou]*[aeiou][bdgkmnprt]", v):
        return v + v[-1] + "ing"
    if v.endswith("ie"):
        return v[:-2] + "ying"
    if v.endswith("e") and not v.endswith("ee"):
        return v[:-1] + "ing"
    return v + "ing"


# Wordings per shape: what users type, picked per question by a hash.
WORDS = {
    "list_function": ["What functions does the {m} module provide?", "Which functions are in {m}?",
                      "List the functions of the {m} module.", "what functions does {m} have"],
    "list_exception": ["Which exceptions does the {m} module define?", "What exceptions are defined in {m}?",
                       "what errors does {m} have"],
    "list_class": ["What classes does the {m} module provide?", "Which classes are in {m}?", "List the classes of {m}."],
    "list_method": ["What methods does {c} have?", "Which methods does the {c} class provide?", "list the methods of {c}"],
    "list_restricted": ["What functions does the {m} module provide for {g}?", "Which {m} functions are for {g}?"],
    "raises": ["Which exceptions can {x} raise?", "What does {x} raise?", "what errors can {x} throw"],
    "module_of": ["Which module is {x} in?", "What module do I import {x} from?"],
    "subclass_of": ["What is {x} a subclass of?", "Which exception is {x} a subclass of?"],
    "params": ["What arguments does {x} accept?", "Which parameters does {x} take?"],
    "default": ["What is the default value of {p} in {x}?", "What does {p} default to in {x}?"],
    "added": ["Since which Python version is {x} available?", "In which version was {x} added?"],
    "deprecated": ["Is {x} deprecated?", "Since which version is {x} deprecated?"],
    "compare": ["What is the difference between {a} and {b}?", "{a} vs {b}: what is the difference?"],
}

QUOTA = {"list_function": 14, "list_exception": 8, "list_class": 8, "list_method": 10, "list_restricted": 6,
         "raises": 12, "module_of": 6, "subclass_of": 6, "params": 6, "default": 8, "added": 8, "deprecated": 5,
         "compare": 6}
# The two examples (issue 24), kept whatever the hash picks: shutil's functions for copying files
# (gold: those whose description starts with "Copy") and the exceptions json.loads raises.
EXAMPLES = {("shutil", "copy"): "files", "json.loads": True}
MAX_ITEMS = 15  # longest gold list asked for (an answer lists up to 20 items)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else docroot("python3.11-doc", "/html/py-modindex.html")
    cands = {k: [] for k in QUOTA}
    lib = os.path.join(root, "library")
    for f in sorted(os.listdir(lib)):
        if not f.endswith(".html"):
            continue
        page = "library/" + f
        tree = parse(os.path.join(lib, f))
        mods = [n.attrs["id"][len("module-"):] for n in tree.walk() if n.tag == "section" and n.attrs.get("id", "").startswith("module-")]
        if not mods:
            continue
        m = mods[0]
        es = entries(tree, page)
        top = [e for e in es if e.id.startswith(m + ".") and e.id.count(".") == m.count(".") + 1]
        by = lambda k: [e for e in top if e.kind == k]

        def add(kind, key, gold, **fmt):
            if gold and len(gold) <= MAX_ITEMS:
                cands[kind].append((h(kind + key), key, gold, fmt, page))

        add("list_function", m, [e.id for e in by("function")] if len(by("function")) >= 2 else None, m=m)
        add("list_exception", m, [e.id for e in by("exception")] if len(by("exception")) >= 2 else None, m=m)
        add("list_class", m, [e.id for e in by("class")] if len(by("class")) >= 2 else None, m=m)
        for c in by("class"):
            ms = [e.id for e in es if e.kind == "method" and e.id.startswith(c.id + ".") and e.id.count(".") == c.id.count(".") + 1]
            add("list_method", c.id, ms if len(ms) >= 2 else None, c=c.id)
        funcs = by("function")
        verbs = {}
        for e in funcs:
            w = (e.first_sentence().split() or [""])[0].lower()
            w = re.sub(r"[^a-z]", "", w)
            if len(w) > 3:
                verbs.setdefault(re.sub(r"(ies|es|s)$", lambda x: "y" if x.group(1) == "ies" else "", w), []).append(e.id)
        for v, ids in verbs.items():
            if (m, v) in EXAMPLES:  # the example, asked as a user wrote it
                cands["list_restricted"].append((0, m + "/" + v, ids, {"m": m, "g": gerund(v) + " " + EXAMPLES[m, v]}, page))
            named = sum(1 for i in ids if v[:4] in last(i).lower())
            if 2 <= len(ids) <= 8 and len(funcs) >= 2 * len(ids) and 2 * named >= len(ids):
                add("list_restricted", m + "/" + v, ids, m=m, g=gerund(v))
        for e in es:
            if e.kind in ("function", "method"):
                r = e.raises()
                if e.id in EXAMPLES:
                    cands["raises"].append((0, e.id, r, {"x": e.id}, page))
                add("raises", e.id, r if 1 <= len(r) <= 5 else None, x=e.id)
                ps = e.params()
                add("params", e.id, [p for p, _ in ps] if 2 <= len(ps) <= 6 else None, x=e.id)
                for p, d in ps:
                    if d is not None and p != "kwargs":
                        add("default", e.id + "/" + p, [d], x=e.id, p=p)
            if e.kind in ("function", "class", "exception") and e in top:
                add("module_of", e.id, [m], x=e.id)
            if e.kind == "exception":
                s = e.subclass_of()
                add("subclass_of", e.id, [s] if s else None, x=e.id)
            if e.kind in ("function", "method", "class"):
                a = e.version("versionadded")
                add("added", e.id, [a] if a else None, x=e.id)
                d = e.version("deprecated")
                add("deprecated", e.id, [d] if d else None, x=e.id)
        names = {last(e.id): e for e in funcs}
        for n, e in names.items():
            for suf in ("s", "2", "_all", "b"):
                if n + suf in names:
                    add("compare", e.id, [e.id, names[n + suf].id], a=e.id, b=names[n + suf].id)
    out = []
    for kind, quota in QUOTA.items():
        cs = sorted(cands[kind])
        pages = set()
        for hv, key, gold, fmt, page in cs:
            if sum(1 for o in out if o["id"].startswith(kind + ":")) >= quota:
                break
            if page in pages and kind not in ("list_method",):
                continue  # spread a shape over pages
            pages.add(page)
            ws_ = WORDS[kind]
            q = ws_[hv % len(ws_)].format(**fmt)
            out.append({"id": kind + ":" + key, "kind": kind.split("_")[0] if kind.startswith("list") else kind,
                        "question": q, "gold_page": page, "gold_items": gold})
    for o in out:
        print(json.dumps(o))
    print(f"{len(out)} questions", file=sys.stderr)


if __name__ == "__main__":
    main()
