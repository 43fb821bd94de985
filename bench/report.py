"""The report of `make bench`: reads the raw results deploy/bench.sh wrote
into a directory, prints one table, and writes it as Markdown (with the
machine and date) and as a PNG chart.

    python bench/report.py RESULTS_DIR bench/results.md bench/results.png
"""

import glob
import json
import os
import re
import statistics
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def runs(rdir, prefix):
    """The measure.py figures and the command's JSON output of each run."""
    out = []
    for m in sorted(glob.glob(os.path.join(rdir, prefix + "_[0-9]*.json"))):
        with open(m[:-5] + ".out") as f:
            out.append((load(m), json.loads(f.read().strip().splitlines()[-1])))
    return out


def med(xs):
    return statistics.median(xs)


def load_figures(path):
    text = open(path).read()
    num = r"([0-9.]+)"
    figs = {}
    m = re.search(r"REST c16: (\d+) answers in [0-9.]+s = " + num + r" answers/s, p50 " + num + r" ms, p99 " + num + r" ms, failed (\d+)", text)
    if m:
        figs["REST"] = dict(n=int(m[1]), rate=float(m[2]), p50=float(m[3]), p99=float(m[4]), failed=int(m[5]), how="16 concurrent clients")
    m = re.search(r"websocket: (\d+) clients, (\d+) completed in [0-9.]+s = " + num + r" answers/s, (\d+) failed, \d+ frames, p50 " + num + r" ms, p99 " + num + " ms", text)
    if m:
        figs["websocket"] = dict(n=int(m[2]), rate=float(m[3]), failed=int(m[4]), p50=float(m[5]), p99=float(m[6]), how=f"{m[1]} clients at once, streamed")
    m = re.search(r"NATS c32: (\d+) answers in [0-9.]+s = " + num + r" answers/s, p50 " + num + r" ms, p99 " + num + r" ms, failed (\d+)", text)
    if m:
        figs["NATS"] = dict(n=int(m[1]), rate=float(m[2]), p50=float(m[3]), p99=float(m[4]), failed=int(m[5]), how="32 concurrent requesters, streamed")
    m = re.search(r"server peak RSS (\d+) MB", text)
    if m:
        figs["serve_rss_mb"] = int(m[1])
    for k in ("REST", "websocket", "NATS"):
        if k not in figs:
            sys.exit(f"report: no {k} figures in {path}")
    return figs


def machine(path):
    out = {}
    for line in open(path):
        k, _, v = line.strip().partition("=")
        out[k] = v
    return out


def scale(rdir):
    """The scale section (deploy/bench-scale.sh): one row per point (corpus and crawl size), and the page-BM25 baseline."""
    labels = [m.group(1) for m in (re.search(r"scale_ingest_([\w.-]+)\.json$", f) for f in glob.glob(os.path.join(rdir, "scale_ingest_*.json"))) if m]
    if not labels:
        return None
    rows = []
    for n in labels:
        p = lambda kind, ext="json": os.path.join(rdir, f"scale_{kind}_{n}.{ext}")
        if not os.path.exists(p("eval")):
            continue  # a point the run did not finish
        im, io = load(p("ingest")), json.loads(open(p("ingest", "out")).read().strip().splitlines()[-1])
        em, ev = load(p("eval")), json.loads(open(p("eval", "out")).read().strip().splitlines()[-1])
        corpus = open(p("corpus", "txt")).read().strip() if os.path.exists(p("corpus", "txt")) else "jdk"
        scrapy = None
        if os.path.exists(p("scrapy")):
            scrapy = dict(load(p("scrapy")), pages=json.loads(open(p("scrapy", "out")).read().strip().splitlines()[-1])["pages"])
            scrapy["cap"] = scrapy_cap(p("scrapycap", "txt"), scrapy["pages"])
        rows.append(dict(label=n, corpus=corpus, pages=io["pages"], chunks=io["chunks"], triples=io["triples"], wall=im["wall_s"], cpu=im["cpu_s"],
                         rss=im["peak_rss_mb"], mb=int(open(p("bytes", "txt")).read()) / 1e6,
                         eval_rss=em["peak_rss_mb"], ev=ev, serve=load_opt(p("serve")), scrapy=scrapy,
                         load=open(p("load", "txt")).read().strip() if os.path.exists(p("load", "txt")) else ""))
    rows.sort(key=lambda r: r["pages"])
    bm = None
    if os.path.exists(os.path.join(rdir, "scale_bm25s.out")):
        bm = load(os.path.join(rdir, "scale_bm25s.out"))
    return rows, bm


CORPORA = {"py": "Python docs", "jdk": "OpenJDK API", "all": "Python + OpenJDK + PostgreSQL", "big": "Python + OpenJDK + PostgreSQL + Rust",
           "huge": "Python + OpenJDK + PostgreSQL + Rust + LibreOffice + VTK + Trilinos + OpenCV"}


def docs_named(rows):
    """The doc sets a scale run's rows crawled, for its titles: 'Python, OpenJDK 17 API and PostgreSQL 15 docs'.

    >>> docs_named([{"corpus": "jdk"}, {"corpus": "jdk"}])
    'OpenJDK 17 API docs'
    >>> docs_named([{"corpus": "py"}, {"corpus": "jdk"}, {"corpus": "big"}])
    'Python, OpenJDK 17 API, PostgreSQL 15 and Rust 1.63 docs'
    >>> docs_named([{"corpus": "huge"}])
    'Python, OpenJDK 17 API, PostgreSQL 15, Rust 1.63, LibreOffice SDK, VTK 9, Trilinos and OpenCV 4 docs'
    """
    corpora = {r["corpus"] for r in rows}
    sets = [name for name, on in (("Python", ("py", "all", "big", "huge")), ("OpenJDK 17 API", ("jdk", "all", "big", "huge")),
                                  ("PostgreSQL 15", ("all", "big", "huge")), ("Rust 1.63", ("big", "huge")),
                                  ("LibreOffice SDK", ("huge",)), ("VTK 9", ("huge",)), ("Trilinos", ("huge",)), ("OpenCV 4", ("huge",)))
            if corpora & set(on)]
    if not sets:
        return "docs"
    return (", ".join(sets[:-1]) + " and " + sets[-1] if len(sets) > 1 else sets[0]) + " docs"


# The questions deploy/bench-scale.sh asks at each corpus's points.
QUESTIONS = {"py": "bench/pydocs_questions.jsonl", "jdk": "bench/javadoc_questions.jsonl", "all": "bench/javadoc_questions.jsonl", "big": "bench/javadoc_questions.jsonl",
             "huge": "bench/javadoc_questions.jsonl"}


def quality(e, key, measured_by=None):
    """A quality figure of an eval summary to three places, or a dash when the
    summary lacks it: a missing figure is never shown as a zero. kgagent eval
    omits the agent's figures when they are zero (omitempty), so one missing
    from a run that measured that side (measured_by, its latency, is there)
    is 0.000."""
    if key in e:
        return f"{e[key]:.3f}"
    return "0.000" if measured_by and measured_by in e else "–"


def questions_line(rows):
    """Which known-item questions the scale points asked, per corpus present."""
    by = {}
    for r in rows:
        names = by.setdefault(QUESTIONS.get(r["corpus"], "?"), [])
        if CORPORA.get(r["corpus"], r["corpus"]) not in names:
            names.append(CORPORA.get(r["corpus"], r["corpus"]))
    parts = [f"`{q}` ({', '.join(names)})" for q, names in by.items()]
    return "Known-item questions: " + "; ".join(parts) + "; quality figures count at the whole site only."


def load_opt(path):
    """The JSON at path, or None when the run left none (an older results dir)."""
    return load(path) if os.path.exists(path) else None


def serve_cells(sv):
    """The serve columns: first serve's ready time (its CPU seconds by then, when
    recorded), and RSS when ready -> after the requests (peak)."""
    if not sv:
        return ["", ""]
    ready = f"{sv['ready_s']:.1f} s"
    if "cpu_ready_s" in sv:
        ready += f" ({sv['cpu_ready_s']:.1f} CPU-s)"
    return [ready, f"{sv['rss_ready_mb']:.0f} -> {sv['rss_end_mb']:.0f} MB after {sv['requests']:,} (peak {sv['peak_rss_mb']:.0f})"]


def scrapy_cap(path, pages):
    """The page cap KGAGENT_BENCH_SCALE_SCRAPY_PAGES put on Scrapy at a point,
    or None when Scrapy crawled the same site as kgagent: no cap was set there,
    or the site ran out of pages before the cap (Scrapy's page count is then
    well below it; at the cap it is the cap give or take the few responses
    CLOSESPIDER_PAGECOUNT counts that are not HTML pages, or that were in
    flight)."""
    if not os.path.exists(path):
        return None
    cap = int(open(path).read().strip())
    return cap if pages >= 0.95 * cap else None


def scrapy_cells(r):
    """Scrapy in the same run: its wall (pages), and kgagent's pages/s over
    Scrapy's. Where Scrapy was capped (scrapy_cap) it crawled only the site's
    first pages, and the ratio takes its pages/s on those: marked as such."""
    sc = r.get("scrapy")
    if not sc:
        return ["", ""]
    ratio = f"{(r['pages'] / r['wall']) / (sc['pages'] / sc['wall_s']):.1f}x"
    if sc.get("cap"):
        return [f"{sc['wall_s']:.0f} s (capped: first {sc['pages']:,} pages)", ratio + f" (Scrapy's pages/s on its first {sc['pages']:,} pages)"]
    return [f"{sc['wall_s']:.0f} s ({sc['pages']:,} pages)", ratio]


def http_cells(sv):
    """search and agent p50/p99 over HTTP, from the first serve's requests."""
    if not sv or "search_p50_ms" not in sv:
        return [""]
    return [f"{sv['search_p50_ms']:.1f} / {sv['search_p99_ms']:.0f} · {sv['agent_p50_ms']:.1f} / {sv['agent_p99_ms']:.0f} ms"]


def scale_table(rows, bm):
    head = ("corpus", "pages", "chunks", "triples", "ingest wall", "ingest CPU (per page)", "ingest peak RSS",
            "Scrapy wall (pages)", "kgagent vs Scrapy, pages/s", "data dir",
            "first serve ready", "serve RSS: ready -> after requests", "HTTP search · agent p50 / p99",
            "search p50 / p99", "agent p50 / p99", "eval peak RSS", "search recall@5 / MRR", "agent sources recall@5 / MRR", "load after")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        e = r["ev"]
        out.append("| " + " | ".join([
            CORPORA.get(r["corpus"], r["corpus"]), f"{r['pages']:,}", f"{r['chunks']:,}", f"{r['triples']:,}", f"{r['wall']:.0f} s",
            f"{r['cpu']:.0f} s ({1e3 * r['cpu'] / r['pages']:.1f} ms)", f"{r['rss']:.0f} MB", *scrapy_cells(r), f"{r['mb']:.0f} MB",
            *serve_cells(r.get("serve")), *http_cells(r.get("serve")),
            f"{e['search_p50_ms']:.1f} / {e['search_p99_ms']:.0f} ms", f"{e['answer_p50_ms']:.1f} / {e['answer_p99_ms']:.0f} ms",
            f"{r['eval_rss']:.0f} MB", f"{quality(e, 'recall_at_k')} / {quality(e, 'mrr')}",
            f"{quality(e, 'agent_recall_at_k', 'answer_p50_ms')} / {quality(e, 'agent_mrr', 'answer_p50_ms')}",
            r.get("load", "")]) + " |")
    capped = [r for r in rows if r.get("scrapy") and r["scrapy"].get("cap")]
    if capped:
        out.append("")
        out.append(f"Scrapy capped (KGAGENT_BENCH_SCALE_SCRAPY_PAGES={capped[0]['scrapy']['cap']:,}) at "
                   + ", ".join(f"{CORPORA.get(r['corpus'], r['corpus'])} ({r['pages']:,} pages)" for r in capped)
                   + ": there Scrapy crawled only the first pages of the same site, and the ratio is kgagent's pages/s over Scrapy's"
                   " pages/s on those pages, assuming Scrapy's cost per page does not grow with the site (it keeps no index)."
                   " At the other points Scrapy crawled the same site as kgagent and the ratio is measured.")
    if bm:
        bp, bc = bm["pages"], bm["chunks"]
        jdk = [r for r in rows if r["label"] == "jdk"]
        at = f" at {jdk[0]['pages']:,} pages" if jdk else ""
        out.append("")
        out.append(f"Page BM25 (bm25s over whole pages) on the OpenJDK docs{at}: recall@5 {bp['recall_at_k']:.3f}, MRR {bp['mrr']:.3f}; "
                   f"over kgagent's chunks: {bc['recall_at_k']:.3f} / {bc['mrr']:.3f}.")
    return out


def scale_machine_line(rdir):
    """The scale section's machine line, from the scale_machine.txt deploy/bench-scale.sh writes (None for an older results dir)."""
    path = os.path.join(rdir, "scale_machine.txt")
    if not os.path.exists(path):
        return None
    mc = machine(path)
    niced = f", run at nice {mc['nice']}" if mc.get("nice", "0") != "0" else ""
    cap = f", Scrapy capped at {int(mc['scrapy_pages']):,} pages" if mc.get("scrapy_pages") else ""
    return (f"{mc['date']} to {mc.get('end', '?')} on {mc['nproc']} cores ({mc['cpu']}), {mc['mem_gib']} GiB, load average {mc['load_start']} at the start, "
            f"{mc.get('load', '?')} at the end{niced}; commit {mc['commit']}; points `{mc['points']}`, {int(mc['serve_requests']):,} serve requests{cap}.")


def scale_chart(rows, png_path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["pages"] for r in rows]
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    ax[0].plot(x, [1e3 * r["cpu"] / r["pages"] for r in rows], "o-", label="ingest CPU-ms per page")
    ax[0].plot(x, [1e3 * r["wall"] / r["pages"] for r in rows], "s--", label="ingest wall-ms per page")
    sc = [r for r in rows if r.get("scrapy")]
    if sc:
        capped = " (first pages only where capped)" if any(r["scrapy"].get("cap") for r in sc) else ""
        ax[0].plot([r["pages"] for r in sc], [1e3 * r["scrapy"]["wall_s"] / r["scrapy"]["pages"] for r in sc], "x:", label="Scrapy wall-ms per page" + capped)
    ax[0].set_title("ingest cost per page")
    ax[1].plot(x, [r["rss"] for r in rows], "o-", label="ingest peak RSS")
    ax[1].plot(x, [r["eval_rss"] for r in rows], "s--", label="eval peak RSS")
    ax[1].plot(x, [r["mb"] for r in rows], "^:", label="data dir")
    if all(r.get("serve") for r in rows):
        ax[1].plot(x, [r["serve"]["rss_end_mb"] for r in rows], "d-.", label="serve RSS after requests")
    ax[1].set_title("memory and disk, MB")
    for k, lab, st in (("search_p50_ms", "search p50", "o-"), ("search_p99_ms", "search p99", "o--"),
                       ("answer_p50_ms", "agent p50", "s-"), ("answer_p99_ms", "agent p99", "s--")):
        ax[2].plot(x, [r["ev"][k] for r in rows], st, label=lab)
    ax[2].set_yscale("log")
    ax[2].set_title("query latency, ms (in process)")
    for a in ax:
        a.set_xscale("log")
        a.set_xlabel("pages")
        a.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(png_path, dpi=90)


def main():
    if sys.argv[1] == "--scale":
        # the scale section alone: report.py --scale RESULTS_DIR OUT.md OUT.png
        rdir, md_path, png_path = sys.argv[2:5]
        rows, bm = scale(rdir)
        table = scale_table(rows, bm)
        line = scale_machine_line(rdir)
        if line is None:
            mc = machine(os.path.join(rdir, "machine.txt")) if os.path.exists(os.path.join(rdir, "machine.txt")) else {}
            line = " ".join(f"{k}={v}" for k, v in mc.items())
        with open(md_path, "w") as f:
            f.write("\n".join([f"# Scale ({docs_named(rows)})", "", "`deploy/bench-scale.sh`", "", questions_line(rows), "", *table, "", line, ""]))
        print("\n".join(table))
        print()
        print(line)
        scale_chart(rows, png_path, f"kgagent scale: {docs_named(rows)}")
        return
    rdir, md_path, png_path = sys.argv[1:4]
    kg = runs(rdir, "kgagent_ingest")
    sc = runs(rdir, "scrapy")
    if not kg or not sc:
        sys.exit("report: missing ingestion runs")
    kg_pages = med([o["pages"] for _, o in kg])
    kg_wall = med([m["wall_s"] for m, _ in kg])
    kg_cpu = med([m["cpu_s"] for m, _ in kg])
    kg_rss = med([m["peak_rss_mb"] for m, _ in kg])
    sc_pages = med([o["pages"] for _, o in sc])
    sc_wall = med([m["wall_s"] for m, _ in sc])
    sc_cpu = med([m["cpu_s"] for m, _ in sc])
    sc_rss = med([m["peak_rss_mb"] for m, _ in sc])
    rc_m = load(os.path.join(rdir, "kgagent_recrawl.json"))
    rc_o = json.loads(open(os.path.join(rdir, "kgagent_recrawl.out")).read())
    ev = json.loads(open(os.path.join(rdir, "kgagent_eval.out")).read())
    bm = load(os.path.join(rdir, "bm25s.out"))
    ld = load_figures(os.path.join(rdir, "load.txt"))
    mc = machine(os.path.join(rdir, "machine.txt"))
    chunks, triples = kg[-1][1]["chunks"], kg[-1][1]["triples"]

    kg_pps, sc_pps = kg_pages / kg_wall, sc_pages / sc_wall
    kg_ms, sc_ms = 1e3 * kg_cpu / kg_pages, 1e3 * sc_cpu / sc_pages
    bc, bp = bm["chunks"], bm["pages"]
    n = len(kg)

    def x(a, b):
        return f"{a / b:.1f}×"

    rows = [
        ("**Ingestion** (Python 3.11 docs on loopback)", "**kgagent**", "**Scrapy**", "**kgagent vs Scrapy**"),
        ("pages", f"{kg_pages:.0f} ({chunks:,} chunks, {triples:,} triples)", f"{sc_pages:.0f} (title and text only)", ""),
        (f"wall time, median of {n}", f"{kg_wall:.1f} s", f"{sc_wall:.1f} s", ""),
        ("pages/s", f"{kg_pps:.0f}", f"{sc_pps:.1f}", x(kg_pps, sc_pps) + " faster"),
        ("CPU per page (user+sys)", f"{kg_ms:.1f} ms", f"{sc_ms:.1f} ms", x(sc_ms, kg_ms) + " less"),
        ("peak RSS", f"{kg_rss:.0f} MB", f"{sc_rss:.0f} MB", ""),
        ("unchanged re-crawl", f"{rc_m['wall_s']:.2f} s ({rc_o['unchanged']} pages unchanged)", "", x(kg_wall, rc_m["wall_s"]) + " faster than the first"),
        (f"**Retrieval** ({ev['questions']} questions, gold page in top {ev['k']})", "**kgagent hybrid**", "**bm25s (chunks / pages)**", ""),
        (f"recall@{ev['k']}", f"{ev['recall_at_k']:.3f}", f"{bc['recall_at_k']:.3f} / {bp['recall_at_k']:.3f}", ""),
        ("MRR", f"{ev['mrr']:.3f}", f"{bc['mrr']:.3f} / {bp['mrr']:.3f}", ""),
        ("search latency p50 / p99", f"{ev['search_p50_ms']:.2f} / {ev['search_p99_ms']:.1f} ms", f"{bc['search_p50_ms']:.2f} / {bc['search_p99_ms']:.1f} ms (chunks)", ""),
        ("**Answers** (every answer computed)", "**kgagent**", "", ""),
        ("in process (`eval --answers`), p50 / p99", f"{ev['answer_p50_ms']:.1f} / {ev['answer_p99_ms']:.0f} ms; names the module in {100 * ev.get('answer_contains', 0):.0f}%, gold page among its first {ev['k']} sources in {100 * ev.get('agent_recall_at_k', 0):.0f}%", "", ""),
    ]
    for k in ("REST", "websocket", "NATS"):
        f = ld[k]
        rows.append((f"{k} ({f['how']})", f"{f['rate']:.0f} answers/s, p50 {f['p50']:.1f} ms, p99 {f['p99']:.1f} ms, {f['failed']} failed of {f['n'] + f['failed']}", "", ""))

    head = ("", "kgagent", "alternative", "ratio (same run)")
    table = ["| " + " | ".join(head) + " |", "|---|---|---|---|"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    niced = f", run at nice {mc['nice']}" if mc.get("nice", "0") != "0" else ""
    if mc.get("autogroup_nice", "0") not in ("0", ""):
        niced += f" (autogroup nice {mc['autogroup_nice']})"
    machine_line = (f"{mc['date']} on {mc['nproc']} cores ({mc['cpu']}), {mc['mem_gib']} GiB, load average {mc.get('load_start', '?')} at the start, {mc['load']} at the end{niced}; "
                    f"commit {mc['commit']}, {mc['go']}, Scrapy {mc['scrapy']}, bm25s {mc['bm25s']}.")
    sc = scale(rdir)
    scale_md = []
    if sc:
        scale_md = [f"## Scale: {docs_named(sc[0])} (`deploy/bench-scale.sh`)", "",
                    questions_line(sc[0]), "",
                    *scale_table(*sc), "", *([scale_machine_line(rdir), ""] if scale_machine_line(rdir) else []), f"![scale chart]({os.path.basename(png_path)[:-4]}-scale.png)", ""]
    md = "\n".join(["# Benchmark results", "", "`make bench` (deploy/bench.sh)", "", *table, "", machine_line, "", *scale_md])
    with open(md_path, "w") as f:
        f.write(md)
    print("\n".join(table))
    print()
    print(machine_line)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 4, figsize=(16, 4))
    c_kg, c_other = "#2a6fb0", "#b0b0b0"
    ax[0].bar(["kgagent", "Scrapy"], [kg_pps, sc_pps], color=[c_kg, c_other])
    ax[0].set_title("ingestion, pages/s (higher is better)")
    ax[1].bar(["kgagent", "Scrapy"], [kg_ms, sc_ms], color=[c_kg, c_other])
    ax[1].set_title("CPU-ms per page (lower is better)")
    names = ["kgagent", "bm25s chunks", "bm25s pages"]
    w = 0.38
    r5 = [ev["recall_at_k"], bc["recall_at_k"], bp["recall_at_k"]]
    mrr = [ev["mrr"], bc["mrr"], bp["mrr"]]
    ax[2].bar([i - w / 2 for i in range(3)], r5, w, label="recall@5", color=c_kg)
    ax[2].bar([i + w / 2 for i in range(3)], mrr, w, label="MRR", color="#7fb3e0")
    ax[2].set_xticks(range(3), names)
    ax[2].set_ylim(0, 1.15)
    ax[2].legend(loc="upper center", ncol=2)
    ax[2].set_title("retrieval quality")
    tr = ["REST", "websocket", "NATS"]
    ax[3].bar(tr, [ld[k]["rate"] for k in tr], color=c_kg)
    for i, k in enumerate(tr):
        ax[3].annotate(f"p50 {ld[k]['p50']:.0f} ms", (i, ld[k]["rate"]), ha="center", va="bottom", fontsize=8)
    ax[3].set_title("computed answers/s")
    fig.suptitle(f"kgagent make bench, {mc['date']}, {mc['nproc']} cores", fontsize=10)
    fig.tight_layout()
    fig.savefig(png_path, dpi=90)
    if sc:
        print()
        print("\n".join(scale_table(*sc)))
        scale_chart(sc[0], png_path[:-4] + "-scale.png", f"kgagent scale ({docs_named(sc[0])}), {mc['date']}, {mc['nproc']} cores")


if __name__ == "__main__":
    main()
