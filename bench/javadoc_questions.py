#!/usr/bin/env python3
"""Known-item questions from OpenJDK 17's API docs (Debian package openjdk-17-doc): each asks for a class, interface,
enum, record or annotation by the first sentence of its description — the <div class="block"> of the page's
<section class="class-description">, the sentence Javadoc itself copies into allclasses-index.html, package-summary.html
and the other summary pages. The gold page is the type's own page; a good answer names the type.

Sampling is deterministic and spread across packages: the type pages of each package are ordered by a hash of their
path, the packages by a hash of their name, and one type is taken from each package in turn (round robin) until N
questions are chosen. A description is left out when it is shorter than 6 words, when more than one type has it (no
single right answer), when it names the type itself (that asks for a name, not a description), or when it is a
deprecation note or an inherited-doc placeholder.
Usage: javadoc_questions.py [APIROOT [N]] > javadoc_questions.jsonl   (APIROOT default /usr/share/doc/openjdk-17-doc/api,
N default 250; gold_page is relative to APIROOT)"""
import collections, hashlib, html, json, os, re, sys

SECTION = re.compile(r'<section class="class-description"[^>]*>(.*?)</section>', re.S)
BLOCK = re.compile(r'<div class="block">(.*?)</div>', re.S)
# A sentence ends at . ! or ? followed by white space and a capital, a quote or an opening parenthesis (or the end);
# common abbreviations do not end one.
END = re.compile(r'[.!?](?=\s+[A-Z"(<]|\s*$)')
ABBREV = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "resp.", "Inc.")


def h(s):
    return hashlib.sha256(s.encode()).hexdigest()


def ws(s):
    return re.sub(r"\s+", " ", s).strip()


def text(fragment):
    """The fragment as plain text: tags dropped, entities decoded, white space collapsed."""
    return ws(html.unescape(re.sub(r"<[^>]+>", "", fragment)))


def first_sentence(t):
    for m in END.finditer(t):
        s = t[: m.end()]
        if not s.endswith(ABBREV):
            return s
    return t


def description(path):
    """The first sentence of the type's description, or "" when the page has none."""
    with open(path, encoding="utf-8") as f:
        page = f.read()
    sec = SECTION.search(page)
    if not sec:
        return ""
    blk = BLOCK.search(sec.group(1))
    if not blk:
        return ""
    return first_sentence(text(blk.group(1)))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/doc/openjdk-17-doc/api"
    want = int(sys.argv[2]) if len(sys.argv) > 2 else 250
    by_pkg = collections.defaultdict(list)
    for dirpath, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in ("class-use", "doc-files", "index-files", "resources", "legal"))
        rel = os.path.relpath(dirpath, root)
        if rel == "." or os.sep not in rel:
            continue  # the root and the module folders hold no type pages
        for f in sorted(files):
            if f.endswith(".html") and "-" not in f:  # package-summary.html, module-summary.html, ... are no types
                by_pkg[rel].append(os.path.join(rel, f))
    descs = {}
    for pages in by_pkg.values():
        for p in pages:
            descs[p] = description(os.path.join(root, p))
    asked = collections.Counter(descs.values())

    def usable(p):
        d, name = descs[p], os.path.basename(p)[: -len(".html")].split(".")[-1]
        return (len(d.split()) >= 6 and asked[d] == 1 and not d.startswith("Deprecated")
                and "inheritDoc" not in d and "{@" not in d and name not in d)

    queues = [collections.deque(sorted((p for p in pages if usable(p)), key=h))
              for _, pages in sorted(by_pkg.items(), key=lambda kv: h(kv[0]))]
    queues = [q for q in queues if q]
    out = []
    while len(out) < want and queues:
        for q in queues:
            if len(out) < want and q:
                out.append(q.popleft())
        queues = [q for q in queues if q]
    for p in out:
        name = os.path.basename(p)[: -len(".html")]
        d = descs[p]
        q = "Which Java class is this: " + (d[0].lower() + d[1:] if d[1:2].islower() else d)
        print(json.dumps({"id": p.replace(os.sep, "/")[: -len(".html")].split("/", 1)[1].replace("/", "."),
                          "question": q, "gold_page": p.replace(os.sep, "/"), "must_contain": name.split(".")[-1]}))
    print(f"{len(out)} questions from {len(by_pkg)} packages", file=sys.stderr)


if __name__ == "__main__":
    main()
