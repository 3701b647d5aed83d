"""Builds the configured providers: the only place that maps settings to classes.

Imports are lazy so that choosing the embedded defaults never imports a cloud SDK, and vice versa.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from librarian.embeddings.base import DenseEmbedder, SparseEmbedder
from librarian.files.base import FileStore
from librarian.graph.store import GraphStore
from librarian.index.base import EmbeddingContract, VectorIndex
from librarian.parsing.types import Parser
from librarian.settings import Settings, get_settings

T = TypeVar("T")


@dataclass
class Stack:
    """The providers of one process. Each is created on first use and then shared."""

    settings: Settings
    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    _memo_lock: Any = field(default_factory=threading.RLock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A dropped stack frees its models and sessions, but glibc keeps freed arenas mapped: without
        # this, notebooks and tests that build stacks repeatedly still grew ~60 MiB per round.
        weakref.finalize(self, _return_freed_memory)

    def memo(self, key: str, build: Callable[[], T]) -> T:
        """An object built once per stack by code outside `librarian` (e.g. the query-time reranker).

        Query-time helpers live in `tools/`, which `librarian` must not import; they keep their
        per-stack objects here so that each is built once, not on every call. A failed build is not
        remembered: the next call raises again with the same clear error.
        """
        with self._memo_lock:
            if key not in self._memo:
                self._memo[key] = build()
            return self._memo[key]

    @cached_property
    def files(self) -> FileStore:
        s = self.settings
        if s.file_store == "s3":
            from librarian.files.s3 import S3FileStore

            return S3FileStore(bucket=s.s3_bucket or "", prefix=s.s3_prefix, endpoint_url=s.s3_endpoint_url)
        from librarian.files.local import LocalFileStore

        return LocalFileStore(s.files_dir)

    @cached_property
    def parser(self) -> Parser:
        s = self.settings
        if s.parser == "reducto":
            from librarian.parsing.reducto import ReductoParser

            return ReductoParser(
                api_key=s.reducto_api_key or "", base_url=s.reducto_base_url, chunk_size=s.chunk_size
            )
        from librarian.parsing.local import LocalParser

        return LocalParser(chunk_size=s.chunk_size, ocr=s.ocr)

    @cached_property
    def dense(self) -> DenseEmbedder:
        s = self.settings
        if s.dense_embedder == "openai":
            from librarian.embeddings.openai import OpenAIDenseEmbedder

            return OpenAIDenseEmbedder(
                api_key=s.embedding_api_key() or "",
                model=s.openai_embedding_model,
                dimension=s.openai_embedding_dimension,
                base_url=s.openai_base_url,
                batch_size=s.embed_batch_size,
            )
        if s.dense_embedder == "e5":
            from librarian.embeddings.e5 import E5Embedder

            return E5Embedder(batch_size=s.embed_batch_size)
        from librarian.embeddings.minilm import MiniLMEmbedder

        return MiniLMEmbedder(batch_size=s.embed_batch_size)

    @cached_property
    def sparse(self) -> SparseEmbedder:
        s = self.settings
        if s.sparse_embedder == "pinecone":
            from librarian.embeddings.pinecone_sparse import PineconeSparseEmbedder

            return PineconeSparseEmbedder(api_key=s.pinecone_api_key or "", host=s.pinecone_host)
        from librarian.embeddings.lexical import LexicalSparseEmbedder

        return LexicalSparseEmbedder()

    @property
    def contract(self) -> EmbeddingContract:
        """The contract implied by the configured embedders (the index must match it)."""
        return EmbeddingContract(
            dense_model=self.dense.model_id,
            dimension=self.dense.dimension,
            sparse_model=self.sparse.model_id,
        )

    @cached_property
    def index(self) -> VectorIndex:
        s = self.settings
        if s.vector_index == "pinecone":
            from librarian.index.pinecone import PineconeVectorIndex

            return PineconeVectorIndex(
                api_key=s.pinecone_api_key or "",
                index_name=s.pinecone_index_name,
                contract=self.contract,
                host=s.pinecone_host,
                cloud=s.pinecone_cloud,
                region=s.pinecone_region,
                batch_size=s.upsert_batch_size,
                max_request_bytes=s.pinecone_upsert_max_bytes,
                score_breakdown=s.pinecone_score_breakdown,
            )
        if s.vector_index == "pgvector":
            from librarian.index.pgvector import PgVectorIndex

            return PgVectorIndex(
                s.postgres_url or "",
                contract=self.contract,
                table=s.pgvector_table,
                exact_limit=s.pgvector_exact_limit,
            )
        from librarian.index.lance import LanceVectorIndex

        return LanceVectorIndex(s.lance_dir, contract=self.contract, compact_every=s.lance_compact_every)

    @cached_property
    def graph_store(self) -> GraphStore:
        """GraphRAG store: SQLite in the data directory, PostgreSQL when LIBRARIAN_POSTGRES_URL is set."""
        from librarian.graph.store import open_graph_store

        return open_graph_store(self.settings)


def _return_freed_memory() -> None:
    """Give freed heap pages back to the OS (glibc `malloc_trim`); a no-op elsewhere."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


# The environment's stack lives as long as the process: graph nodes ask for it on every step.
# Stacks for explicit settings (tests, notebooks, benchmarks) are held weakly: keying them strongly
# by `id(settings)` kept every stack built in a process alive, models, sessions and index handles
# included (+150-230 MiB per build-ingest-drop round), and a reused id could even return a stale one.
_env_stack: Stack | None = None
_stacks: weakref.WeakValueDictionary[int, Stack] = weakref.WeakValueDictionary()
_guard = threading.Lock()


def get_stack(settings: Settings | None = None) -> Stack:
    """The stack for `settings` (default: from the environment), shared while anyone holds it."""
    global _env_stack
    settings = settings or get_settings()
    with _guard:
        if get_settings.cache_info().currsize and settings is get_settings():
            if _env_stack is None or _env_stack.settings is not settings:
                _env_stack = Stack(settings)
            return _env_stack
        stack = _stacks.get(id(settings))
        if stack is None or stack.settings is not settings:
            stack = Stack(settings)
            _stacks[id(settings)] = stack
        return stack
