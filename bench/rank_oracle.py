#!/usr/bin/env python3
"""The ceiling of choosing between kgagent's rankings: for each question of a set, the rank of its gold page
among the distinct pages of /api/v1/search in keyword, dense and hybrid mode (50 hits each), each mode's recall@5
and MRR@5, and what an oracle that takes, question by question, whichever mode ranks the gold page highest
would score. No system can choose like that; a figure above the oracle's needs a better reader, not a better
fusion of these rankings.

    python3 bench/rank_oracle.py http://127.0.0.1:8080 pydocs bench/natural_pydocs.jsonl

(a running `kgagent serve` of the collection; the gold page matches as a suffix of the page URL, a directory URL
counting as its index.html, as `kgagent eval` matches it).
"""
import json, sys, urllib.parse, urllib.request
base, collection, qfile = sys.argv[1], sys.argv[2], sys.argv[3]
K = 50
def search(q, mode):
    body = json.dumps({"query": q, "k": K, "mode": mode, "collection": collection}).encode()
    r = urllib.request.urlopen(urllib.request.Request(base + "/api/v1/search", body, {"Content-Type": "application/json"}), timeout=60)
    hits = json.load(r)["hits"]
    pages = []
    for h in hits:
        u = h["url"].split("#")[0]
        if u not in pages:
            pages.append(u)
    return pages
def rank(pages, gold):
    for i, p in enumerate(pages):
        path = urllib.parse.urlsplit(p).path
        if path.endswith("/"):
            path += "index.html"
        # the site's own index.html only as itself: as a suffix it would match every directory
        if path == "/" + gold or (gold != "index.html" and path.endswith("/" + gold)):
            return i + 1
    return None
rows = []
for line in open(qfile):
    d = json.loads(line)
    if not d.get("gold_page"):
        continue
    g = d["gold_page"]
    r = {m: rank(search(d["question"], m), g) for m in ("keyword", "dense", "hybrid")}
    rows.append(r)
def score(ranks):
    rec = sum(1 for x in ranks if x and x <= 5) / len(ranks)
    mrr = sum(1 / x for x in ranks if x and x <= 5) / len(ranks)
    return rec, mrr
n = len(rows)
for m in ("keyword", "dense", "hybrid"):
    print(m, "recall@5 %.3f MRR@5 %.3f" % score([r[m] for r in rows]))
best = [min([x for x in (r["keyword"], r["dense"], r["hybrid"]) if x] or [None]) if any((r["keyword"], r["dense"], r["hybrid"])) else None for r in rows]
print("oracle best-of-three recall@5 %.3f MRR@5 %.3f" % score(best))
print("gold in top-%d of any ranking: %.3f" % (K, sum(1 for b in best if b) / n))
print("n", n)
