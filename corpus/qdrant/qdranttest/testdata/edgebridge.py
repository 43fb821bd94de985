"""A gRPC front for Qdrant's own engine, to run the corpus/qdrant suite where
no Qdrant server binary can be had.

It serves the subset of Qdrant's gRPC API that corpus/qdrant calls, using the
service stubs shipped in the qdrant-client package, and hands every request
to qdrant-edge-py (Qdrant's shard code embedded in Python): one EdgeShard per
collection does the storage, payload indexes, filtering, dense and sparse
(IDF) scoring, prefetch and RRF fusion, counting and facets. What it does not
test is Qdrant's own gRPC layer and request validation: this file translates
the messages itself.

    python3 -m venv /tmp/edge
    /tmp/edge/bin/pip install qdrant-edge-py==0.9.0 qdrant-client grpcio
    /tmp/edge/bin/python edgebridge.py 127.0.0.1:6334 &
    QDRANT_URL=127.0.0.1:6334 go test ./corpus/qdrant/ -run Real -v
"""
import shutil
import sys
import tempfile
import threading
import uuid
from concurrent import futures

import grpc
import qdrant_client.grpc as pb
import qdrant_edge as q

lock = threading.Lock()
collections = {}  # name -> dict(shard, dir, req, indexes, metadata)


def abort(ctx, code, msg):
    ctx.abort(code, msg)


def from_value(v):
    kind = v.WhichOneof("kind")
    if kind == "null_value" or kind is None:
        return None
    if kind == "list_value":
        return [from_value(x) for x in v.list_value.values]
    if kind == "struct_value":
        return {k: from_value(x) for k, x in v.struct_value.fields.items()}
    return getattr(v, kind)


def to_value(x):
    if x is None:
        return pb.Value(null_value=pb.NullValue.NULL_VALUE)
    if isinstance(x, bool):
        return pb.Value(bool_value=x)
    if isinstance(x, int):
        return pb.Value(integer_value=x)
    if isinstance(x, float):
        return pb.Value(double_value=x)
    if isinstance(x, str):
        return pb.Value(string_value=x)
    if isinstance(x, list):
        return pb.Value(list_value=pb.ListValue(values=[to_value(e) for e in x]))
    return pb.Value(struct_value=pb.Struct(fields={k: to_value(e) for k, e in x.items()}))


def point_id(pid):
    return pid.uuid if pid.WhichOneof("point_id_options") == "uuid" else pid.num


def to_point_id(x):
    if isinstance(x, int):
        return pb.PointId(num=x)
    return pb.PointId(uuid=str(x))


def condition(c, ctx):
    which = c.WhichOneof("condition_one_of")
    if which == "filter":
        return to_filter(c.filter, ctx)
    if which != "field":
        abort(ctx, grpc.StatusCode.UNIMPLEMENTED, "bridge: condition " + str(which))
    m = c.field.match
    mv = m.WhichOneof("match_value")
    if mv == "keyword":
        return q.FieldCondition(key=c.field.key, match=q.MatchValue(m.keyword))
    if mv == "keywords":
        return q.FieldCondition(key=c.field.key, match=q.MatchAny(list(m.keywords.strings)))
    if mv == "integer":
        return q.FieldCondition(key=c.field.key, match=q.MatchValue(m.integer))
    abort(ctx, grpc.StatusCode.UNIMPLEMENTED, "bridge: match " + str(mv))


def to_filter(f, ctx):
    if f is None:
        return None
    must = [condition(c, ctx) for c in f.must]
    should = [condition(c, ctx) for c in f.should]
    must_not = [condition(c, ctx) for c in f.must_not]
    if not (must or should or must_not):
        return None
    return q.Filter(must=must or None, should=should or None, must_not=must_not or None)


def opt_filter(msg, ctx, field="filter"):
    return to_filter(getattr(msg, field), ctx) if msg.HasField(field) else None


def nearest(query, using, ctx):
    which = query.WhichOneof("variant")
    if which != "nearest":
        abort(ctx, grpc.StatusCode.UNIMPLEMENTED, "bridge: query " + str(which))
    vi = query.nearest
    kind = vi.WhichOneof("variant")
    if kind == "dense":
        return q.Query.Nearest(list(vi.dense.data), using=using or None)
    if kind == "sparse":
        return q.Query.Nearest(q.SparseVector(indices=list(vi.sparse.indices), values=list(vi.sparse.values)), using=using or None)
    abort(ctx, grpc.StatusCode.UNIMPLEMENTED, "bridge: nearest " + str(kind))


def scoring(query, using, ctx):
    which = query.WhichOneof("variant")
    if which == "fusion":
        if query.fusion != pb.Fusion.RRF:
            abort(ctx, grpc.StatusCode.UNIMPLEMENTED, "bridge: fusion")
        return q.Fusion.Rrf(k=2)
    if which == "rrf":
        k = query.rrf.k if query.rrf.HasField("k") else 2
        return q.Fusion.Rrf(k=k, weights=list(query.rrf.weights) or None)
    return nearest(query, using, ctx)


def get(name, ctx):
    c = collections.get(name)
    if c is None:
        abort(ctx, grpc.StatusCode.NOT_FOUND, "Not found: Collection `%s` doesn't exist!" % name)
    return c


class Qdrant(pb.QdrantServicer):
    def HealthCheck(self, req, ctx):
        return pb.HealthCheckReply(title="qdrant-edge bridge", version=q.__name__)


class Collections(pb.CollectionsServicer):
    def CollectionExists(self, req, ctx):
        with lock:
            return pb.CollectionExistsResponse(result=pb.CollectionExists(exists=req.collection_name in collections))

    def List(self, req, ctx):
        with lock:
            return pb.ListCollectionsResponse(collections=[pb.CollectionDescription(name=n) for n in sorted(collections)])

    def Create(self, req, ctx):
        with lock:
            if req.collection_name in collections:
                abort(ctx, grpc.StatusCode.INVALID_ARGUMENT, "Wrong input: Collection `%s` already exists!" % req.collection_name)
            if req.vectors_config.HasField("params"):
                dense = q.EdgeVectorParams(size=req.vectors_config.params.size, distance=q.Distance.Cosine)
            else:
                dense = {n: q.EdgeVectorParams(size=p.size, distance=q.Distance.Cosine) for n, p in req.vectors_config.params_map.map.items()}
            sparse = {
                n: q.EdgeSparseVectorParams(modifier=q.Modifier.Idf if p.modifier == pb.Modifier.Idf else None)
                for n, p in req.sparse_vectors_config.map.items()
            }
            d = tempfile.mkdtemp(prefix="edgebridge")
            shard = q.EdgeShard.create(d, q.EdgeConfig(vectors=dense, sparse_vectors=sparse))
            collections[req.collection_name] = dict(shard=shard, dir=d, req=req, indexes=set(), metadata=dict(req.metadata))
            return pb.CollectionOperationResponse(result=True)

    def Get(self, req, ctx):
        with lock:
            c = get(req.collection_name, ctx)
            cr = c["req"]
            params = pb.CollectionParams(shard_number=1, vectors_config=cr.vectors_config, sparse_vectors_config=cr.sparse_vectors_config)
            config = pb.CollectionConfig(params=params, hnsw_config=cr.hnsw_config, metadata=c["metadata"])
            schema = {f: pb.PayloadSchemaInfo(data_type=pb.PayloadSchemaType.Keyword) for f in c["indexes"]}
            n = c["shard"].count(q.CountRequest(exact=True))
            return pb.GetCollectionInfoResponse(result=pb.CollectionInfo(status=pb.CollectionStatus.Green, config=config, payload_schema=schema, points_count=n))

    def Delete(self, req, ctx):
        with lock:
            c = collections.pop(req.collection_name, None)
            if c is None:
                return pb.CollectionOperationResponse(result=False)
            c["shard"].close()
            shutil.rmtree(c["dir"], ignore_errors=True)
            return pb.CollectionOperationResponse(result=True)


def done():
    return pb.PointsOperationResponse(result=pb.UpdateResult(operation_id=0, status=pb.UpdateStatus.Completed))


class Points(pb.PointsServicer):
    def CreateFieldIndex(self, req, ctx):
        with lock:
            c = get(req.collection_name, ctx)
            if req.field_type != pb.FieldType.FieldTypeKeyword:
                abort(ctx, grpc.StatusCode.UNIMPLEMENTED, "bridge: only keyword indexes")
            c["shard"].update(q.UpdateOperation.create_field_index(req.field_name, q.PayloadSchemaType.Keyword))
            c["indexes"].add(req.field_name)
            return done()

    def Upsert(self, req, ctx):
        with lock:
            c = get(req.collection_name, ctx)
            points = []
            for p in req.points:
                vec = {}
                for name, v in p.vectors.vectors.vectors.items():
                    which = v.WhichOneof("vector")
                    if which == "dense":
                        vec[name] = list(v.dense.data)
                    elif which == "sparse":
                        vec[name] = q.SparseVector(indices=list(v.sparse.indices), values=list(v.sparse.values))
                    else:
                        abort(ctx, grpc.StatusCode.UNIMPLEMENTED, "bridge: vector " + str(which))
                pid = point_id(p.id)
                if isinstance(pid, str):
                    pid = uuid.UUID(pid)
                points.append(q.Point(id=pid, vector=vec, payload={k: from_value(v) for k, v in p.payload.items()}))
            try:
                c["shard"].update(q.UpdateOperation.upsert_points(points))
            except Exception as e:  # the engine's validation errors
                abort(ctx, grpc.StatusCode.INVALID_ARGUMENT, str(e))
            return done()

    def Delete(self, req, ctx):
        with lock:
            c = get(req.collection_name, ctx)
            sel = req.points.WhichOneof("points_selector_one_of")
            if sel == "filter":
                c["shard"].update(q.UpdateOperation.delete_points_by_filter(to_filter(req.points.filter, ctx)))
            else:
                ids = [point_id(i) for i in req.points.points.ids]
                c["shard"].update(q.UpdateOperation.delete_points([uuid.UUID(i) if isinstance(i, str) else i for i in ids]))
            return done()

    def Count(self, req, ctx):
        with lock:
            c = get(req.collection_name, ctx)
            n = c["shard"].count(q.CountRequest(exact=True, filter=opt_filter(req, ctx)))
            return pb.CountResponse(result=pb.CountResult(count=n))

    def Facet(self, req, ctx):
        with lock:
            c = get(req.collection_name, ctx)
            limit = req.limit if req.HasField("limit") else 10
            res = c["shard"].facet(q.FacetRequest(key=req.key, limit=limit, filter=opt_filter(req, ctx), exact=True))
            return pb.FacetResponse(hits=[pb.FacetHit(value=pb.FacetValue(string_value=str(h.value)), count=h.count) for h in res.hits])

    def Query(self, req, ctx):
        with lock:
            c = get(req.collection_name, ctx)
            prefetches = [
                q.Prefetch(
                    limit=pf.limit if pf.HasField("limit") else 10,
                    query=nearest(pf.query, pf.using, ctx),
                    filter=opt_filter(pf, ctx),
                )
                for pf in req.prefetch
            ]
            wp = True
            if req.HasField("with_payload"):
                which = req.with_payload.WhichOneof("selector_options")
                if which == "enable":
                    wp = req.with_payload.enable
                elif which == "include":
                    wp = list(req.with_payload.include.fields)
                elif which == "exclude":
                    wp = q.PayloadSelector.Exclude(list(req.with_payload.exclude.fields))
            else:
                wp = False
            qr = q.QueryRequest(
                limit=req.limit if req.HasField("limit") else 10,
                offset=req.offset if req.HasField("offset") else None,
                query=scoring(req.query, req.using, ctx),
                prefetches=prefetches or None,
                filter=opt_filter(req, ctx),
                with_payload=wp,
            )
            out = []
            for r in c["shard"].query(qr):
                payload = {k: to_value(v) for k, v in (r.payload or {}).items()}
                out.append(pb.ScoredPoint(id=to_point_id(r.id), payload=payload, score=r.score))
            return pb.QueryResponse(result=out)


def main():
    addr = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:6334"
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    pb.add_QdrantServicer_to_server(Qdrant(), server)
    pb.add_CollectionsServicer_to_server(Collections(), server)
    pb.add_PointsServicer_to_server(Points(), server)
    server.add_insecure_port(addr)
    server.start()
    print("edge bridge on", addr, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
