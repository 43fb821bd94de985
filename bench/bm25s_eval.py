"""The bm25s side of `make bench`: BM25 (the bm25s package, English stop
words, Snowball stemmer) over the very chunks kgagent indexed, scored on the
same questions the way `kgagent eval` scores kgagent: the gold page among the
first K distinct pages of the top 50 chunks (recall@K) and 1/rank of the gold
page (MRR). It also ranks whole pages (each page's chunks joined). Latency is
one question at a time, tokenising included, one thread.

The chunks come as JSON lines {doc_url, title, headings, text} from
deploy/chunkdump (a file, or - for stdin), which reads them out of a data
dir's index.db through the store's own code: the store keeps most bodies
compressed and URLs and ids packed, which sqlite3 alone cannot read back.

    chunkdump DATA_DIR COLLECTION > chunks.jsonl
    python bench/bm25s_eval.py chunks.jsonl QUESTIONS.jsonl BASE_URL > out.json
"""

import json
import statistics
import sys
import time

import bm25s
import Stemmer


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def evaluate(name, texts, urls, questions, base, k=5, depth=50):
    stemmer = Stemmer.Stemmer("english")
    t0 = time.perf_counter()
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    build = time.perf_counter() - t0
    recall = mrr = 0.0
    lat = []
    for q in questions:
        gold = base + q["gold_page"]
        t0 = time.perf_counter()
        qt = bm25s.tokenize([q["question"]], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, _ = retriever.retrieve(qt, k=min(depth, len(texts)), show_progress=False, n_threads=1)
        lat.append(time.perf_counter() - t0)
        seen = []
        rank = 0
        for i in docs[0]:
            u = urls[int(i)]
            if u in seen:
                continue
            seen.append(u)
            if u == gold or u.endswith("/" + q["gold_page"]):
                rank = len(seen)
                break
        if 0 < rank <= k:
            recall += 1
        if rank:
            mrr += 1 / rank
    n = len(questions)
    return {"name": name, "docs": len(texts), "recall_at_k": recall / n, "mrr": mrr / n, "k": k,
            "search_p50_ms": pct(lat, 0.5) * 1e3, "search_p99_ms": pct(lat, 0.99) * 1e3,
            "search_mean_ms": statistics.mean(lat) * 1e3, "index_s": build}


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: bm25s_eval.py CHUNKS.jsonl|- QUESTIONS.jsonl BASE_URL")
    cpath, qpath, base = sys.argv[1:4]
    questions = [json.loads(line) for line in open(qpath) if line.strip()]
    texts, urls, pages = [], [], {}
    with (sys.stdin if cpath == "-" else open(cpath)) as f:
        for line in f:
            if not line.strip():
                continue
            c = json.loads(line)
            text = " ".join([c["title"], " ".join(c["headings"]), c["text"]])
            texts.append(text)
            urls.append(c["doc_url"])
            pages.setdefault(c["doc_url"], []).append(text)
    if not texts:
        sys.exit(f"bm25s_eval.py: no chunks in {cpath}")
    out = {"questions": len(questions),
           "chunks": evaluate("bm25s over kgagent's chunks", texts, urls, questions, base),
           "pages": evaluate("bm25s over whole pages", ["\n".join(v) for v in pages.values()], list(pages), questions, base)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
