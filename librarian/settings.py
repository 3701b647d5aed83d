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
    dense_embedder: Literal["minilm", "openai"] = "minilm"
    sparse_embedder: Literal["local", "pinecone"] = "local"
    vector_index: Literal["lancedb", "pinecone"] = "lancedb"
    reranker: Literal["local", "none", "pinecone", "llm", "cross-encoder"] = "local"

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

    # --- read path
    alpha: float = Field(default=0.75, ge=0.0, le=1.0)
    candidates: int = 40
    top_k: int = 8
    score_floor: float | None = None
    rerank_model_path: Path | None = None

    # --- chat model
    chat_model: str | None = None
    chat_base_url: str | None = None

    # --- auth
    auth_secret: str | None = None
    auth_jwks_url: str | None = None
    auth_issuer: str | None = None
    auth_audience: str | None = None

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
        if self.reranker == "llm" and not self.chat_model:
            raise ConfigError("LIBRARIAN_CHAT_MODEL is not set, but LIBRARIAN_RERANKER=llm needs it")
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
