"""Builds the configured providers once per process: the only place that maps settings to classes.

Imports are lazy so that choosing the embedded defaults never imports a cloud SDK, and vice versa.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from librarian.embeddings.base import DenseEmbedder, SparseEmbedder
from librarian.files.base import FileStore
from librarian.index.base import EmbeddingContract, VectorIndex
from librarian.parsing.types import Parser
from librarian.settings import Settings, get_settings


@dataclass
class Stack:
    """The providers of one process. Each is created on first use and then shared."""

    settings: Settings

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
                api_key=s.openai_api_key or "",
                model=s.openai_embedding_model,
                dimension=s.openai_embedding_dimension,
                base_url=s.openai_base_url,
                batch_size=s.embed_batch_size,
            )
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
            )
        from librarian.index.lance import LanceVectorIndex

        return LanceVectorIndex(s.lance_dir, contract=self.contract, compact_every=s.lance_compact_every)


_stacks: dict[int, Stack] = {}


def get_stack(settings: Settings | None = None) -> Stack:
    """The process-wide stack for `settings` (default: from the environment)."""
    settings = settings or get_settings()
    key = id(settings)
    if key not in _stacks:
        _stacks[key] = Stack(settings)
    return _stacks[key]
