"""Computes testdata/edge_golden.json: what Qdrant's own engine answers for the
fixture and queries in edge_cases.json, so that TestAgainstQdrantEdge can hold
the stand-in to the same numbers.

The engine is qdrant-edge-py (PyPI), Qdrant's shard code embedded in a Python
module: the same segment, sparse-index, IDF, filter and fusion code as the
server, without the gRPC layer. Re-run after changing edge_cases.json:

    python3 -m venv /tmp/edge && /tmp/edge/bin/pip install qdrant-edge-py==0.9.0
    /tmp/edge/bin/python edge_golden.py
"""
import json
import os
import tempfile

import qdrant_edge as q

here = os.path.dirname(os.path.abspath(__file__))
cases = json.load(open(os.path.join(here, "edge_cases.json")))

config = q.EdgeConfig(
    vectors={"d": q.EdgeVectorParams(size=cases["dim"], distance=q.Distance.Cosine)},
    sparse_vectors={
        "s": q.EdgeSparseVectorParams(modifier=q.Modifier.Idf),
        "p": q.EdgeSparseVectorParams(),
    },
)
shard = q.EdgeShard.create(tempfile.mkdtemp(), config)
points = []
for p in cases["points"]:
    vec = {"d": p["d"]}
    if p["s"]["indices"]:
        sv = q.SparseVector(indices=p["s"]["indices"], values=p["s"]["values"])
        vec["s"] = sv
        vec["p"] = q.SparseVector(indices=p["s"]["indices"], values=p["s"]["values"])
    points.append(q.Point(id=p["id"], vector=vec, payload={"tags": p["tags"]}))
shard.update(q.UpdateOperation.upsert_points(points))


def flt(spec):
    if not spec:
        return None
    must = [q.FieldCondition(key="tags", match=q.MatchValue(t)) for t in spec.get("must", [])]
    must_not = [q.FieldCondition(key="tags", match=q.MatchValue(t)) for t in spec.get("must_not", [])]
    return q.Filter(must=must or None, must_not=must_not or None)


def leaf(spec):
    if spec["using"] == "d":
        return q.Query.Nearest(spec["dense"], using="d")
    return q.Query.Nearest(q.SparseVector(indices=spec["sparse"]["indices"], values=spec["sparse"]["values"]), using=spec["using"])


golden = {}
for c in cases["queries"]:
    if "fusion" in c:
        prefetches = [q.Prefetch(limit=pf["limit"], query=leaf(pf), filter=flt(pf.get("filter"))) for pf in c["prefetch"]]
        fusion = q.Fusion.Rrf(k=c["fusion"]["k"], weights=c["fusion"].get("weights"))
        req = q.QueryRequest(limit=c["limit"], query=fusion, prefetches=prefetches, filter=flt(c.get("filter")))
    else:
        req = q.QueryRequest(limit=c["limit"], query=leaf(c), filter=flt(c.get("filter")))
    golden[c["name"]] = [[r.id, r.score] for r in shard.query(req)]

with open(os.path.join(here, "edge_golden.json"), "w") as f:
    json.dump({"engine": "qdrant-edge-py 0.9.0", "results": golden}, f, indent=1, sort_keys=True)
    f.write("\n")
print(json.dumps(golden, indent=1))
