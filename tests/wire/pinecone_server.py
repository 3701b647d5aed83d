"""A local Pinecone (API 2026-07) for tests: control plane, vector data plane and inference.

Pinecone is unreachable here, so the adapters are tested against this server through the real
`pinecone` SDK: whatever the SDK serialises is what the server parses, and whatever the server
answers must decode into the SDK's response models. It is deliberately strict where Pinecone is
(dimensions, flat metadata, batch limits, sparse values only on hybrid indexes) so an adapter bug
fails here rather than in production. Scoring is exact (no ANN), so tests can assert scores.

Every index's data plane is served under `/data/{index}`; that is the `host` describe returns, which
keeps several indexes apart on one port. Unprefixed data-plane paths address the only index.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.wire.loopback import LoopbackServer

API_VERSION = "2026-07"
TEST_API_KEY = "pc-test-key"
DENSE_FIELD = "_values"
SPARSE_FIELD = "_sparse_values"
MAX_UPSERT_VECTORS = 1000
# Pinecone's documented caps: 2 MB for an upsert request, 4 MB for a query result. "MB" is read as
# 1,000,000 bytes, the stricter of the two readings, so a client that fits here fits there.
MAX_UPSERT_REQUEST_BYTES = 2_000_000
MAX_QUERY_RESULT_BYTES = 4_000_000
MAX_EMBED_INPUTS = 96  # Pinecone's per-request limit for its hosted embedding models
DENSE_EMBED_DIMENSIONS = {"multilingual-e5-large": 1024, "llama-text-embed-v2": 1024}
SPARSE_EMBED_MODELS = {"pinecone-sparse-english-v0"}
_TOKEN = re.compile(r"[a-z0-9]+")


class WireError(Exception):
    """An HTTP error answered in Pinecone's error envelope."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class RecordedRequest:
    """One request as the SDK sent it, for assertions about the wire (namespace, alpha, batches)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    status: int = 0
    size: int = 0  # request body bytes, as the SDK encoded them
    response_size: int = 0  # response body bytes, as this server encoded them
    response: Any = None  # the answer's JSON payload

    @property
    def namespace(self) -> str | None:
        """The namespace named in the body or the query string (None when absent)."""
        if isinstance(self.body, dict) and "namespace" in self.body:
            return self.body["namespace"]
        values = self.query.get("namespace")
        return values[0] if values else None


@dataclass
class StoredVector:
    id: str
    values: list[float]
    sparse: dict[int, float]
    metadata: dict[str, Any]

    def to_json(self, include_values: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        if include_values:
            out["values"] = self.values
            if self.sparse:
                out["sparseValues"] = {
                    "indices": list(self.sparse),
                    "values": list(self.sparse.values()),
                }
        if self.metadata:
            out["metadata"] = self.metadata
        return out


@dataclass
class WireIndex:
    """One index: its control-plane description and its namespaces."""

    name: str
    dimension: int
    metric: str = "dotproduct"
    sparse_field: bool = True
    tags: dict[str, str] | None = None
    cloud: str = "aws"
    region: str = "us-east-1"
    namespaces: dict[str, dict[str, StoredVector]] = field(default_factory=dict)

    def schema(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            DENSE_FIELD: {"type": "dense_vector", "dimension": self.dimension, "metric": self.metric}
        }
        if self.sparse_field:
            fields[SPARSE_FIELD] = {"type": "sparse_vector"}
        return {"fields": fields}

    def describe(self, base_url: str) -> dict[str, Any]:
        return {
            "name": self.name,
            "host": f"{base_url}/data/{self.name}",
            "status": {"ready": True, "state": "Ready"},
            "schema": self.schema(),
            "deployment": {
                "deployment_type": "managed",
                "cloud": self.cloud,
                "region": self.region,
                "environment": f"{self.region}-{self.cloud}",
            },
            "deletion_protection": "disabled",
            "tags": self.tags,
        }


# --------------------------------------------------------------------------- metadata filters


def _compare(op: str, value: Any, operand: Any) -> bool:
    """One operator against one stored value. Lists match element-wise, as Pinecone does."""
    if isinstance(value, list):
        if op in ("$ne", "$nin"):
            return all(_compare(op, v, operand) for v in value)
        return any(_compare(op, v, operand) for v in value)
    if op == "$eq":
        return value == operand
    if op == "$ne":
        return value != operand
    if op == "$in":
        return value in operand
    if op == "$nin":
        return value not in operand
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False  # range operators are numeric only in Pinecone
    if op == "$gt":
        return value > operand
    if op == "$gte":
        return value >= operand
    if op == "$lt":
        return value < operand
    if op == "$lte":
        return value <= operand
    raise WireError(400, "INVALID_ARGUMENT", f"unsupported filter operator {op!r}")


def filter_matches(flt: dict[str, Any] | None, metadata: dict[str, Any]) -> bool:
    """Evaluate a Pinecone metadata filter; kept independent of the code under test on purpose."""
    if not flt:
        return True
    for key, cond in flt.items():
        if key == "$and":
            if not all(filter_matches(c, metadata) for c in cond):
                return False
        elif key == "$or":
            if not any(filter_matches(c, metadata) for c in cond):
                return False
        elif key.startswith("$"):
            raise WireError(400, "INVALID_ARGUMENT", f"unsupported filter operator {key!r}")
        elif isinstance(cond, dict):
            for op, operand in cond.items():
                if op == "$exists":
                    if (key in metadata) != bool(operand):
                        return False
                elif key not in metadata:
                    if op not in ("$ne", "$nin"):
                        return False
                elif not _compare(op, metadata[key], operand):
                    return False
        elif key not in metadata or not _compare("$eq", metadata[key], cond):
            return False
    return True


def _check_metadata(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise WireError(400, "INVALID_ARGUMENT", "metadata must be an object")
    for key, value in metadata.items():
        ok = isinstance(value, (str, bool, int, float)) or (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        )
        if not ok:
            raise WireError(
                400,
                "INVALID_ARGUMENT",
                f"Metadata value must be a string, number, boolean or list of strings, "
                f"got {type(value).__name__} for field {key!r}",
            )
    return dict(metadata)


# --------------------------------------------------------------------------- toy inference models


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def token_id(token: str) -> int:
    """A stable uint32 term id (Pinecone's sparse indices are uint32)."""
    return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=4).digest(), "big")


def toy_sparse_embedding(text: str) -> dict[int, float]:
    """Lexical sparse vector: log-saturated term frequency per hashed term."""
    counts: dict[str, int] = {}
    for tok in tokens(text):
        counts[tok] = counts.get(tok, 0) + 1
    return {token_id(t): round(1.0 + math.log(c), 6) for t, c in sorted(counts.items())}


def toy_dense_embedding(model: str, text: str, dimension: int) -> list[float]:
    """A deterministic unit vector derived from a hash of (model, text)."""
    raw: list[float] = []
    counter = 0
    while len(raw) < dimension:
        digest = hashlib.sha256(f"{model}\0{text}\0{counter}".encode()).digest()
        raw.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    raw = raw[:dimension]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [v / norm for v in raw]


def toy_rerank_score(query: str, document: str) -> float:
    """Share of distinct query terms present in the document: in [0, 1], 1 = every term."""
    q = set(tokens(query))
    if not q:
        return 0.0
    return len(q & set(tokens(document))) / len(q)


# --------------------------------------------------------------------------- the server


class PineconeWireServer(LoopbackServer):
    """Speaks Pinecone's REST wire format on 127.0.0.1; start with `start()` or as a context manager."""

    def __init__(self, api_key: str = TEST_API_KEY) -> None:
        self.api_key = api_key
        self.indexes: dict[str, WireIndex] = {}
        self.requests: list[RecordedRequest] = []
        self._failures: list[tuple[int, str | None]] = []
        self._lock = threading.RLock()
        super().__init__()

    # ----- test controls
    def add_index(self, name: str, dimension: int, **kwargs: Any) -> WireIndex:
        """Pre-create an index, as if someone built it earlier (e.g. with another contract)."""
        with self._lock:
            index = WireIndex(name=name, dimension=dimension, **kwargs)
            self.indexes[name] = index
            return index

    def fail_next(self, count: int, status: int = 503, path: str | None = None) -> None:
        """Answer the next `count` requests (to paths ending in `path`, if given) with `status`."""
        with self._lock:
            self._failures.extend([(status, path)] * count)

    def requests_to(self, suffix: str, method: str | None = None) -> list[RecordedRequest]:
        """Recorded requests whose path ends with `suffix` (e.g. "/vectors/upsert")."""
        with self._lock:
            return [
                r for r in self.requests if r.path.endswith(suffix) and (method is None or r.method == method)
            ]

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    # ----- dispatch (called from handler threads)
    def handle(
        self, method: str, raw_path: str, headers: dict[str, str], body: Any, size: int = 0
    ) -> tuple[int, Any]:
        _, status, payload = self._handle(method, raw_path, headers, body, size)
        return status, payload

    def _handle(
        self, method: str, raw_path: str, headers: dict[str, str], body: Any, size: int
    ) -> tuple[RecordedRequest, int, Any]:
        parts = urlsplit(raw_path)
        path = unquote(parts.path)
        record = RecordedRequest(method, path, parse_qs(parts.query), headers, body, size=size)
        with self._lock:
            self.requests.append(record)
            status, payload = self._dispatch(record)
            record.status, record.response = status, payload
            return record, status, payload

    def encode_response(self, record: RecordedRequest, status: int, payload: Any) -> tuple[int, bytes]:
        """Encode the answer once; a query result over Pinecone's 4 MB cap becomes its 400 instead."""
        data = json.dumps(payload).encode()
        if status == 200 and record.path.endswith("/query") and len(data) > MAX_QUERY_RESULT_BYTES:
            status = 400
            message = (
                f"Query result size {len(data) / 1e6:.1f}MB exceeds the maximum supported size of 4MB; "
                "lower top_k or leave out values or metadata"
            )
            data = json.dumps(
                {"error": {"code": "INVALID_ARGUMENT", "message": message}, "status": status}
            ).encode()
            record.status = status
        record.response_size = len(data)
        return status, data

    def _take_failure(self, path: str) -> int | None:
        for i, (status, suffix) in enumerate(self._failures):
            if suffix is None or path.endswith(suffix):
                del self._failures[i]
                return status
        return None

    def _dispatch(self, req: RecordedRequest) -> tuple[int, Any]:
        try:
            failure = self._take_failure(req.path)
            if failure is not None:
                raise WireError(failure, "UNAVAILABLE", f"injected failure ({failure})")
            if req.headers.get("api-key") != self.api_key:
                raise WireError(401, "UNAUTHENTICATED", "Invalid API Key")
            return self._route(req)
        except WireError as err:
            return err.status, {"error": {"code": err.code, "message": err.message}, "status": err.status}

    def _route(self, req: RecordedRequest) -> tuple[int, Any]:
        path, method = req.path.rstrip("/"), req.method
        if path == "/indexes" and method == "GET":
            return 200, {"indexes": [i.describe(self.url) for i in self.indexes.values()]}
        if path == "/indexes" and method == "POST":
            return self._create_index(req.body)
        if path.startswith("/indexes/") and method == "GET":
            return 200, self._index(path.removeprefix("/indexes/")).describe(self.url)
        if path == "/embed" and method == "POST":
            return 200, self._embed(req.body)
        if path == "/rerank" and method == "POST":
            return 200, self._rerank(req.body)
        index, op = self._data_plane_target(path)
        handlers = {
            ("POST", "/vectors/upsert"): self._upsert,
            ("POST", "/query"): self._query,
            ("POST", "/vectors/delete"): self._delete,
            ("POST", "/describe_index_stats"): self._stats,
            ("GET", "/vectors/list"): self._list,
            ("GET", "/vectors/fetch"): self._fetch,
        }
        handler = handlers.get((method, op))
        if handler is None:
            raise WireError(404, "NOT_FOUND", f"no route for {method} {req.path}")
        return 200, handler(index, req)

    # ----- control plane
    def _index(self, name: str) -> WireIndex:
        if name not in self.indexes:
            raise WireError(404, "NOT_FOUND", f"Resource {name} not found")
        return self.indexes[name]

    def _create_index(self, body: dict[str, Any]) -> tuple[int, Any]:
        name = body.get("name") or ""
        if name in self.indexes:
            raise WireError(409, "ALREADY_EXISTS", f"Resource {name} already exists")
        fields = (body.get("schema") or {}).get("fields") or {}
        dense = fields.get(DENSE_FIELD)
        if not dense or dense.get("type") != "dense_vector":
            raise WireError(400, "INVALID_ARGUMENT", "this server only hosts vector indexes (_values)")
        unknown = set(fields) - {DENSE_FIELD, SPARSE_FIELD}
        if unknown:
            raise WireError(400, "INVALID_ARGUMENT", f"unsupported schema fields {sorted(unknown)}")
        deployment = body.get("deployment") or {"cloud": "aws", "region": "us-east-1"}
        index = WireIndex(
            name=name,
            dimension=int(dense["dimension"]),
            metric=dense.get("metric", "cosine"),
            sparse_field=SPARSE_FIELD in fields,
            tags=body.get("tags"),
            cloud=deployment.get("cloud", "aws"),
            region=deployment.get("region", "us-east-1"),
        )
        self.indexes[name] = index
        return 201, index.describe(self.url)

    # ----- data plane
    def _data_plane_target(self, path: str) -> tuple[WireIndex, str]:
        if path.startswith("/data/"):
            name, _, rest = path.removeprefix("/data/").partition("/")
            return self._index(name), "/" + rest
        if len(self.indexes) != 1:
            raise WireError(404, "NOT_FOUND", f"no route for {path}")
        return next(iter(self.indexes.values())), path

    def _upsert(self, index: WireIndex, req: RecordedRequest) -> dict[str, Any]:
        if req.size > MAX_UPSERT_REQUEST_BYTES:
            raise WireError(
                400,
                "INVALID_ARGUMENT",
                f"Request size {req.size / 1e6:.1f}MB exceeds the maximum supported size of 2MB",
            )
        vectors = req.body.get("vectors") or []
        if len(vectors) > MAX_UPSERT_VECTORS:
            raise WireError(400, "INVALID_ARGUMENT", f"at most {MAX_UPSERT_VECTORS} vectors per upsert")
        parsed = [self._parse_vector(index, v) for v in vectors]
        ns = index.namespaces.setdefault(req.body.get("namespace", ""), {})
        for vec in parsed:
            ns[vec.id] = vec
        return {"upsertedCount": len(parsed)}

    def _parse_vector(self, index: WireIndex, v: dict[str, Any]) -> StoredVector:
        values = [float(x) for x in v.get("values") or []]
        if len(values) != index.dimension:
            raise WireError(
                400,
                "INVALID_ARGUMENT",
                f"Vector dimension {len(values)} does not match the dimension of the index {index.dimension}",
            )
        sparse_json = v.get("sparseValues") or v.get("sparse_values")
        sparse: dict[int, float] = {}
        if sparse_json:
            if not index.sparse_field:
                raise WireError(400, "INVALID_ARGUMENT", "index has no sparse_vector field")
            sparse = dict(zip(sparse_json["indices"], map(float, sparse_json["values"]), strict=True))
        return StoredVector(str(v["id"]), values, sparse, _check_metadata(v.get("metadata")))

    def _query(self, index: WireIndex, req: RecordedRequest) -> dict[str, Any]:
        body = req.body
        vector = body.get("vector")
        sparse_json = body.get("sparseVector")
        if vector is None:
            raise WireError(400, "INVALID_ARGUMENT", "a dense index needs a query vector")
        if len(vector) != index.dimension:
            raise WireError(
                400,
                "INVALID_ARGUMENT",
                f"Vector dimension {len(vector)} does not match the dimension of the index {index.dimension}",
            )
        if sparse_json and index.metric != "dotproduct":
            raise WireError(400, "INVALID_ARGUMENT", "sparse queries need metric dotproduct")
        q_sparse = (
            dict(zip(sparse_json["indices"], sparse_json["values"], strict=True)) if sparse_json else {}
        )
        namespace = body.get("namespace", "")
        flt = body.get("filter")
        scored = []
        for vec in index.namespaces.get(namespace, {}).values():
            if not filter_matches(flt, vec.metadata):
                continue
            dense = sum(a * b for a, b in zip(vector, vec.values, strict=True))
            if index.metric == "cosine":
                norms = math.sqrt(sum(a * a for a in vector)) * math.sqrt(sum(b * b for b in vec.values))
                dense = dense / norms if norms else 0.0
            sparse = sum(w * vec.sparse.get(i, 0.0) for i, w in q_sparse.items())
            scored.append((dense + sparse, vec))
        scored.sort(key=lambda pair: (-pair[0], pair[1].id))
        matches = []
        for score, vec in scored[: int(body.get("topK", 10))]:
            match = vec.to_json(include_values=bool(body.get("includeValues")))
            if not body.get("includeMetadata"):
                match.pop("metadata", None)
            match["score"] = score
            matches.append(match)
        return {"matches": matches, "namespace": namespace, "usage": {"readUnits": 1}}

    def _delete(self, index: WireIndex, req: RecordedRequest) -> dict[str, Any]:
        body = req.body
        ns = index.namespaces.get(body.get("namespace", ""), {})
        if body.get("deleteAll"):
            ns.clear()
        elif "ids" in body:
            for vid in body["ids"]:
                ns.pop(vid, None)
        elif body.get("filter"):
            for vid in [v.id for v in ns.values() if filter_matches(body["filter"], v.metadata)]:
                del ns[vid]
        else:
            raise WireError(400, "INVALID_ARGUMENT", "delete needs ids, filter or deleteAll")
        return {}

    def _stats(self, index: WireIndex, req: RecordedRequest) -> dict[str, Any]:
        flt = (req.body or {}).get("filter")
        counts = {
            name: sum(1 for v in ns.values() if filter_matches(flt, v.metadata))
            for name, ns in index.namespaces.items()
            if ns
        }
        return {
            "namespaces": {name: {"vectorCount": n} for name, n in counts.items()},
            "dimension": index.dimension,
            "indexFullness": 0.0,
            "totalVectorCount": sum(counts.values()),
            "metric": index.metric,
            "vectorType": "dense",
        }

    def _list(self, index: WireIndex, req: RecordedRequest) -> dict[str, Any]:
        namespace = (req.query.get("namespace") or [""])[0]
        prefix = (req.query.get("prefix") or [""])[0]
        limit = int((req.query.get("limit") or ["100"])[0])
        token = (req.query.get("paginationToken") or [None])[0]
        start = int(base64.urlsafe_b64decode(token).decode()) if token else 0
        ids = sorted(i for i in index.namespaces.get(namespace, {}) if i.startswith(prefix))
        page = ids[start : start + limit]
        out: dict[str, Any] = {
            "vectors": [{"id": i} for i in page],
            "namespace": namespace,
            "usage": {"readUnits": 1},
        }
        if start + limit < len(ids):
            out["pagination"] = {"next": base64.urlsafe_b64encode(str(start + limit).encode()).decode()}
        return out

    def _fetch(self, index: WireIndex, req: RecordedRequest) -> dict[str, Any]:
        namespace = (req.query.get("namespace") or [""])[0]
        ns = index.namespaces.get(namespace, {})
        found = {i: ns[i].to_json() for i in req.query.get("ids", []) if i in ns}
        return {"vectors": found, "namespace": namespace, "usage": {"readUnits": 1}}

    # ----- inference
    def _embed(self, body: dict[str, Any]) -> dict[str, Any]:
        model = body.get("model", "")
        inputs = [item.get("text", "") for item in body.get("inputs") or []]
        params = body.get("parameters") or {}
        if not inputs:
            raise WireError(400, "INVALID_ARGUMENT", "inputs must not be empty")
        if len(inputs) > MAX_EMBED_INPUTS:
            raise WireError(
                400, "INVALID_ARGUMENT", f"Batch size exceeds {MAX_EMBED_INPUTS} inputs for model {model}"
            )
        usage = {"total_tokens": sum(len(tokens(t)) for t in inputs)}
        if model in SPARSE_EMBED_MODELS:
            if params.get("input_type") not in ("passage", "query"):
                raise WireError(400, "INVALID_ARGUMENT", "input_type must be 'passage' or 'query'")
            data = []
            for text in inputs:
                sparse = toy_sparse_embedding(text)
                item: dict[str, Any] = {
                    "sparse_indices": list(sparse),
                    "sparse_values": list(sparse.values()),
                    "vector_type": "sparse",
                }
                if params.get("return_tokens"):
                    item["sparse_tokens"] = sorted(set(tokens(text)))
                data.append(item)
            return {"model": model, "vector_type": "sparse", "data": data, "usage": usage}
        if model not in DENSE_EMBED_DIMENSIONS:
            raise WireError(400, "INVALID_ARGUMENT", f"Model {model!r} not found")
        dim = int(params.get("dimension", DENSE_EMBED_DIMENSIONS[model]))
        data = [{"values": toy_dense_embedding(model, t, dim), "vector_type": "dense"} for t in inputs]
        return {"model": model, "vector_type": "dense", "data": data, "usage": usage}

    def _rerank(self, body: dict[str, Any]) -> dict[str, Any]:
        query = body.get("query", "")
        documents = body.get("documents") or []
        rank_fields = body.get("rank_fields") or ["text"]
        scored = []
        for i, doc in enumerate(documents):
            missing = [f for f in rank_fields if f not in doc]
            if missing:
                raise WireError(400, "INVALID_ARGUMENT", f"document {i} lacks rank field(s) {missing}")
            text = " ".join(str(doc[f]) for f in rank_fields)
            scored.append((toy_rerank_score(query, text), i, doc))
        scored.sort(key=lambda t: (-t[0], t[1]))
        top_n = body.get("top_n") or len(scored)
        data = []
        for score, i, doc in scored[:top_n]:
            item: dict[str, Any] = {"index": i, "score": score}
            if body.get("return_documents", True):
                item["document"] = doc
            data.append(item)
        model = body.get("model", "")
        return {"model": model, "data": data, "usage": {"rerank_units": 1}}

    def namespace_ids(self, index: str, namespace: str) -> list[str]:
        """Ids stored in one namespace of one index (test helper)."""
        with self._lock:
            return sorted(self.indexes[index].namespaces.get(namespace, {}))


class _Handler(BaseHTTPRequestHandler):
    """Thin HTTP shell: parse, hand to the server object, write JSON back."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; don't stall on ACKs
    wire: PineconeWireServer

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        record, status, payload = self.wire._handle(self.command, self.path, headers, body, len(raw))
        status, data = self.wire.encode_response(record, status, payload)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status >= 500 or status == 429:
            self.send_header("Retry-After", "0")  # keep the SDK's own retries instant in tests
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = do_PATCH = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging; tests read `requests` instead."""


PineconeWireServer.handler_class = _Handler
