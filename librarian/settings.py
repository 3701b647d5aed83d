"""One settings object, read from the environment, choosing every provider seam (DESIGN §3).

Defaults are the embedded, offline providers. Choosing a cloud provider without its key is a start-up
error that names the variable, never a silent fallback.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from librarian.errors import ConfigError


class Settings(BaseSettings):
    """All knobs. Environment variables are `LIBRARIAN_<FIELD>` unless an alias is listed."""

    model_config = SettingsConfigDict(env_prefix="LIBRARIAN_", env_file=None, extra="ignore")

    # --- where things live
    data_dir: Path = Path(".librarian-data")

    # --- provider choices (embedded default first)
    file_store: Literal["local", "s3"] = "local"
    parser: Literal["local", "reducto"] = "local"
    dense_embedder: Literal["minilm", "e5", "openai"] = "minilm"
    sparse_embedder: Literal["local", "pinecone"] = "local"
    # Local sparse encoder on the embedded index: IDF from the searched namespace at query time, or the
    # fixed general-English IDF only (README "Retrieval quality").
    sparse_idf: Literal["namespace", "fixed"] = "namespace"
    vector_index: Literal["lancedb", "pinecone"] = "lancedb"
    # "none" by default: the local reranker added +0.006/+0.005/-0.000 nDCG@10 out of sample for
    # 1-2 s a query (README "Retrieval quality"); it stays available as "local".
    reranker: Literal["none", "local", "pinecone", "llm", "cross-encoder"] = "none"

    # --- files
    s3_bucket: str | None = None
    s3_endpoint_url: str | None = None
    s3_prefix: str = ""
    max_upload_bytes: int = 50 * 1024 * 1024
    max_filename_length: int = 200

    # --- parsing
    chunk_size: int = 1000
    ocr: Literal["auto", "off"] = "auto"
    reducto_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("REDUCTO_API_KEY", "LIBRARIAN_REDUCTO_API_KEY")
    )
    reducto_base_url: str | None = None

    # --- embeddings
    embed_batch_size: int = 8  # MiniLM: same speed as 32 here at a third of the peak memory
    openai_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "LIBRARIAN_OPENAI_API_KEY")
    )
    openai_base_url: str | None = None
    openai_embedding_model: str = "text-embedding-3-small"
    openai_embedding_dimension: int = 1536

    # --- index
    upsert_batch_size: int = 100
    pinecone_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("PINECONE_API_KEY", "LIBRARIAN_PINECONE_API_KEY")
    )
    pinecone_host: str | None = None
    pinecone_index_name: str = "document-chunks"
    pinecone_cloud: str = "aws"
    pinecone_region: str = "us-east-1"
    lance_compact_every: int = 50

    # --- checkpoints
    postgres_url: str | None = None

    # --- ingest
    ingest_concurrency: int = 2
    # Per-document limits: over either, the document ends `skipped` before it is embedded.
    max_chunks_per_document: int = Field(default=5000, ge=1)
    max_pages_per_document: int = Field(default=2000, ge=1)
    # Server: ingest work of one organization running at once (parse or embed steps; more wait), and
    # the niceness of the worker process that parses and embeds for the server's ingest runs.
    ingest_concurrency_per_org: int = Field(default=1, ge=1)
    ingest_worker_nice: int = Field(default=10, ge=0, le=19)
    ingest_offload: bool = True  # false: the server parses and embeds in its own process (baseline)

    # --- read path
    alpha: float = Field(default=0.75, ge=0.0, le=1.0)
    candidates: int = 40
    top_k: int = 8
    score_floor: float | None = None
    rerank_model_path: Path | None = None

    # --- GraphRAG build (DESIGN §10): offline defaults; `llm` uses LIBRARIAN_CHAT_MODEL
    graph_extractor: Literal["local", "llm"] = "local"
    graph_summarizer: Literal["local", "llm"] = "local"
    graph_leiden_seed: int = 42
    graph_max_cluster_size: int = Field(default=10, ge=2)  # Leiden: split communities larger than this
    graph_summary_budget: int = Field(default=4000, ge=200)  # tokens of community context
    graph_extract_concurrency: int = Field(default=2, ge=1)  # documents extracted at once
    # false: uploads and deletes no longer schedule a server rebuild (POST /orgs/{org}/graph and
    # `librarian graph build` still build); for bulk loads, where one build at the end is enough
    graph_auto_build: bool = True

    # --- chat model
    chat_model: str | None = None
    chat_base_url: str | None = None

    # --- citations (README "Citations")
    unsupported_sentences: Literal["mark", "drop"] = "mark"
    support_judge: Literal["local", "llm"] = "local"
    answer_floor: float | None = None  # extractive answers; None: graphs/extractive.py ANSWER_FLOOR

    # --- auth
    auth_secret: str | None = None
    auth_jwks_url: str | None = None
    auth_issuer: str | None = None
    auth_audience: str | None = None
    #: Longest accepted life of a shared-secret token (exp - iat, or exp - now without iat).
    auth_max_token_lifetime_s: int = Field(default=24 * 3600, gt=0)

    def validate_providers(self) -> Settings:
        """Raise ConfigError naming the missing variable for any chosen cloud provider."""
        needs: list[tuple[bool, str | None, str]] = [
            (self.parser == "reducto", self.reducto_api_key, "REDUCTO_API_KEY"),
            (self.dense_embedder == "openai", self.openai_api_key, "OPENAI_API_KEY"),
            (self.sparse_embedder == "pinecone", self.pinecone_api_key, "PINECONE_API_KEY"),
            (self.vector_index == "pinecone", self.pinecone_api_key, "PINECONE_API_KEY"),
            (self.reranker == "pinecone", self.pinecone_api_key, "PINECONE_API_KEY"),
            (self.file_store == "s3", self.s3_bucket, "LIBRARIAN_S3_BUCKET"),
            (self.reranker == "cross-encoder", self.rerank_model_path, "LIBRARIAN_RERANK_MODEL_PATH"),
        ]
        for chosen, value, variable in needs:
            if chosen and not value:
                raise ConfigError(f"{variable} is not set, but a provider that needs it was chosen")
        for choice, name in ((self.graph_extractor, "EXTRACTOR"), (self.graph_summarizer, "SUMMARIZER")):
            if choice == "llm" and not self.chat_model:
                raise ConfigError(f"LIBRARIAN_CHAT_MODEL is not set, but LIBRARIAN_GRAPH_{name}=llm needs it")
        if self.reranker == "llm" and not self.chat_model:
            raise ConfigError("LIBRARIAN_CHAT_MODEL is not set, but LIBRARIAN_RERANKER=llm needs it")
        if self.support_judge == "llm" and not self.chat_model:
            raise ConfigError("LIBRARIAN_CHAT_MODEL is not set, but LIBRARIAN_SUPPORT_JUDGE=llm needs it")
        if self.upsert_batch_size < 1 or self.embed_batch_size < 1 or self.ingest_concurrency < 1:
            raise ConfigError("batch sizes and LIBRARIAN_INGEST_CONCURRENCY must be at least 1")
        return self

    @property
    def files_dir(self) -> Path:
        return self.data_dir / "files"

    @property
    def lance_dir(self) -> Path:
        return self.data_dir / "lancedb"

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "checkpoints.sqlite"


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment (plus explicit overrides) and validate providers."""
    return Settings(**overrides).validate_providers()  # type: ignore[arg-type]


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Process-wide settings, read once."""
    return load_settings()
