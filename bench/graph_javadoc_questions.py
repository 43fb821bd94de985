#!/usr/bin/env python3
"""Relation, attribute and list questions over OpenJDK 17's API docs (Debian package openjdk-17-doc), package
java.io, with gold items read from the Javadoc HTML structure — never from kgagent's triples:

- raises:      the <code> names under <dt>Throws:</dt> of a method's <section class="detail"> (all overloads);
- subclass_of: the "extends X" of the page's <div class="type-signature">;
- implements:  <dt>All Implemented Interfaces:</dt> of the type;
- added:       <dt>Since:</dt> of the type;
- list_method: the method <section class="detail"> ids of the type (names, overloads once);
- params:      the <code> names under <dt>Parameters:</dt> of a method without overloads.

Which types are asked about is chosen by a hash of their names; wordings vary per question the same way.
Usage: graph_javadoc_questions.py [APIROOT] > graph_javadoc.jsonl"""
import importlib.util, json, os, re, subprocess, sys

spec = importlib.util.spec_from_file_location("gq", os.path.join(os.path.dirname(__file__), "graph_questions.py"))
gq = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gq)

WORDS = {
    "raises": ["Which exceptions can {x} throw?", "What does {x} throw?"],
    "subclass_of": ["What does {c} extend?", "What is {c} a subclass of?"],
    "implements": ["Which interfaces does {c} implement?", "What interfaces are implemented by {c}?"],
    "added": ["Since which Java version is {c} available?", "In which version was {c} added?"],
    "list_method": ["What methods does {c} have?", "List the methods of {c}."],
    "params": ["What parameters does {x} take?", "Which arguments does {x} accept?"],
}
QUOTA = {"raises": 8, "subclass_of": 6, "implements": 5, "added": 5, "list_method": 6, "params": 5}


def notes(section, title):
    """The <dd>s that follow <dt>title</dt> in the section's own dl.notes, as lists of <code> texts."""
    out = []
    for dl in section.walk(skip=lambda n: n.tag == "section" and n is not section):
        if dl.tag != "dl" or "notes" not in dl.cls():
            continue
        cur = None
        for k in dl.elems():
            if k.tag == "dt":
                cur = gq.ws(k.text())
            elif k.tag == "dd" and cur == title:
                codes = [gq.ws(c.text()) for c in k.walk() if c.tag == "code"]
                out.append(codes[0] if codes else gq.ws(k.text()).split(" ")[0])
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/doc/openjdk-17-jre-headless/api"
    pkg = os.path.join(root, "java.base/java/io")
    cands = {k: [] for k in QUOTA}
    for f in sorted(os.listdir(pkg)):
        if not f.endswith(".html") or "-" in f:
            continue
        page = "api/java.base/java/io/" + f
        tree = gq.parse(os.path.join(pkg, f))
        c = f[:-5]
        add = lambda kind, key, gold, **fmt: cands[kind].append((gq.h(kind + key), key, gold, fmt, page)) if gold and len(gold) <= 15 else None
        sig = next((n for n in tree.walk() if n.tag == "div" and "type-signature" in n.cls()), None)
        if sig is not None:
            m = re.search(r"\bextends ([\w.]+)", gq.ws(sig.text()))
            if m and "interface" not in gq.ws(sig.text()).split(m.group(0))[0]:
                add("subclass_of", c, [m.group(1).split(".")[-1]], c=c)
        desc = next((n for n in tree.walk() if n.tag == "section" and n.attrs.get("id") == "class-description"), None)
        if desc is not None:
            for dl in desc.walk():
                if dl.tag == "dl" and "notes" in dl.cls():
                    cur = None
                    for k in dl.elems():
                        if k.tag == "dt":
                            cur = gq.ws(k.text())
                        elif k.tag == "dd" and cur == "All Implemented Interfaces:":
                            add("implements", c, [re.sub(r"<.*", "", gq.ws(x.text())) for x in k.walk() if x.tag == "code"], c=c)
                        elif k.tag == "dd" and cur == "Since:":
                            add("added", c, [gq.ws(k.text())], c=c)
        methods = {}
        for s in tree.walk():
            if s.tag == "section" and "detail" in s.cls() and "(" in s.attrs.get("id", "") and not s.attrs["id"].startswith("<init>"):
                h3 = next((k for k in s.elems() if k.tag == "h3"), None)
                if h3 is not None:
                    methods.setdefault(gq.ws(h3.text()), []).append(s)
        add("list_method", c, sorted(methods) if len(methods) >= 2 else None, c=c)
        for name, secs in methods.items():
            x = c + "." + name
            thrown = []
            for s in secs:
                for t in notes(s, "Throws:"):
                    if t not in thrown:
                        thrown.append(t)
            add("raises", x, thrown, x=x)
            if len(secs) == 1:
                ps = notes(secs[0], "Parameters:")
                add("params", x, ps if len(ps) >= 2 else None, x=x)
    out = []
    for kind, quota in QUOTA.items():
        pages = set()
        for hv, key, gold, fmt, page in sorted(cands[kind]):
            if sum(1 for o in out if o["id"].startswith(kind + ":")) >= quota:
                break
            if page in pages:
                continue
            pages.add(page)
            q = WORDS[kind][hv % len(WORDS[kind])].format(**fmt)
            out.append({"id": kind + ":" + key, "kind": kind, "question": q, "gold_page": page, "gold_items": gold})
    for o in out:
        print(json.dumps(o))
    print(f"{len(out)} questions", file=sys.stderr)


if __name__ == "__main__":
    main()
