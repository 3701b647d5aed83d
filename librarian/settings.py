"""One settings object, read from the environment, choosing every provider seam (DESIGN §3).

Defaults are the embedded, offline providers. Choosing a cloud provider without its key is a start-up
error that names the variable, never a silent fallback.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from librarian.errors import ConfigError

#: The API key the OpenAI SDK gets for a server at a base URL when no `OPENAI_API_KEY` is set: local
#: OpenAI-compatible servers (vLLM, llama.cpp, Ollama ...) need none, but the SDK needs some string.
NO_KEY_NEEDED = "not-needed"

#: Model-name prefixes `init_chat_model` reads a provider from when the name has no `provider:`
#: (langchain.chat_models.base._attempt_infer_model_provider); only OpenAI's matter here.
_OPENAI_MODEL_PREFIXES = ("gpt-", "o1", "o3", "chatgpt", "text-davinci")
_OTHER_MODEL_PREFIXES = (
    "claude", "command", "accounts/fireworks", "gemini", "amazon.", "anthropic.", "meta.", "mistral",
    "mixtral", "deepseek", "grok", "sonar", "solar",
)  # fmt: skip
#: The LangChain package `init_chat_model` imports for a provider (the common ones).
_CHAT_PROVIDER_PACKAGES = {
    "openai": "langchain-openai",
    "anthropic": "langchain-anthropic",
    "ollama": "langchain-ollama",
    "google_genai": "langchain-google-genai",
    "mistralai": "langchain-mistralai",
    "groq": "langchain-groq",
}


class SettingsError(ConfigError, ValueError):
    """A setting's value is invalid (a ValueError too, as pydantic's own validation error is)."""


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
    vector_index: Literal["lancedb", "pinecone", "pgvector"] = "lancedb"
    # "none" by default: the local reranker added +0.006/+0.005/-0.000 nDCG@10 out of sample for
    # 1-2 s a query (README "Retrieval quality"); it stays available as "local".
    reranker: Literal["none", "local", "pinecone", "llm", "cross-encoder", "cohere"] = "none"

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
    # Ingest runs parse with Reducto's job API (submit, checkpoint the job id, poll without holding a
    # worker; librarian/parsing/reducto_jobs.py) or with the blocking `/parse` ("sync").
    reducto_mode: Literal["job", "sync"] = "job"
    reducto_poll_interval_s: float = Field(default=2.0, gt=0)  # between polls of a pending job
    reducto_job_max_wait_s: float = Field(default=3600.0, gt=0)  # from submission; then `parse_timeout`
    reducto_rate_limit_attempts: int = Field(default=5, ge=1)  # per request answered 429; then `rate_limited`

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
    # Pinecone refuses an upsert request over 2 MB: batches are also cut at this many encoded bytes
    pinecone_upsert_max_bytes: int = Field(default=1_900_000, gt=0, le=2_000_000)
    # Dense and sparse scores of each Pinecone match (it returns only the fused one): one dense-only
    # query in parallel with each search, which about doubles its read units; false leaves them None
    pinecone_score_breakdown: bool = True
    pinecone_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("PINECONE_API_KEY", "LIBRARIAN_PINECONE_API_KEY")
    )
    pinecone_host: str | None = None
    # Pinecone's index-name rule: 1-45 characters, lowercase letters, digits and hyphens, starting and
    # ending with a letter or digit (checked here, so a bad name fails at start-up, not at first use).
    pinecone_index_name: str = Field(
        default="document-chunks", pattern=r"^[a-z0-9](?:[a-z0-9-]{0,43}[a-z0-9])?$"
    )
    pinecone_cloud: str = "aws"
    pinecone_region: str = "us-east-1"
    lance_compact_every: int = 50
    pgvector_table: str = "librarian_chunks"  # the pgvector index's table, in the postgres_url database
    pgvector_exact_limit: int = Field(default=20_000, ge=0)  # rows of a namespace scored exactly

    # --- checkpoints
    postgres_url: str | None = None
    # With `postgres_url`, document runs coordinate through PostgreSQL (several replicas or the CLI
    # beside a server: librarian/runs/coordination.py); `local` keeps this process's own locks.
    coordination: Literal["postgres", "local"] = "postgres"

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

    # --- run admission
    # Server: background runs (ingest, reindex, graph build) admitted to the server's run slots
    # (`--n-jobs-per-worker`) at once: per organization (unset: LIBRARIAN_INGEST_CONCURRENCY_PER_ORG),
    # and in all (unset: the server's slots minus one, so a question always finds a free slot). More
    # wait outside the server's queue, status `queued` (services/run_admission.py). `run_admission`
    # false sends every run straight to the queue, as before (a baseline for bench/fair_slots.py).
    run_slots_per_org: int | None = Field(default=None, ge=1)
    background_run_slots: int | None = Field(default=None, ge=1)
    run_admission: bool = True
    run_admission_sweep_s: float = Field(default=5.0, gt=0)  # the crash-recovery sweep's period

    # --- read path
    alpha: float = Field(default=0.75, ge=0.0, le=1.0)
    candidates: int = 40
    top_k: int = 8
    score_floor: float | None = None
    rerank_model_path: Path | None = None
    # Vector query tool (docs/python.md): more stores a run may pick by name, `name=kind:location`
    # comma-separated (kind lancedb: a directory, relative to data_dir; pgvector: a table in
    # postgres_url's database; pinecone: an index name); the configured index is always `default`.
    vector_stores: str = ""
    # What one run may choose instead of the configured dense embedder / reranker (comma-separated
    # names of LIBRARIAN_DENSE_EMBEDDER / LIBRARIAN_RERANKER values), and its largest top_k.
    vector_query_embedders: str = ""
    vector_query_rerankers: str = "none"
    vector_query_max_top_k: int = Field(default=100, ge=1)
    # Cohere Rerank (LIBRARIAN_RERANKER=cohere) as the semantic part of Mastra's weighted rerank
    # (librarian/retrieval/cohere_scorer.py). Key and base URL also under the SDK's own names.
    cohere_api_key: str | None = Field(
        default=None,
        validation_alias=AliasChoices("COHERE_API_KEY", "CO_API_KEY", "LIBRARIAN_COHERE_API_KEY"),
    )
    cohere_base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("COHERE_BASE_URL", "CO_API_URL", "LIBRARIAN_COHERE_BASE_URL"),
    )
    cohere_rerank_model: str = "rerank-v3.5"
    cohere_timeout_s: float = Field(default=30.0, gt=0)  # per request; the SDK retries 429/5xx twice

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
    # Token budget of one graph build per organization (input + output, as the provider reports them;
    # 0 = unlimited), and per-organization overrides `org=tokens,org2=tokens` (librarian.costs.budget)
    graph_build_token_budget: int = Field(default=0, ge=0)
    graph_build_token_budgets: str = ""
    # Global search: the most a run may ask for (context `graph_global`, `librarian ask --map-budget`);
    # a larger value is refused, naming the option and this limit
    graph_global_max_map_budget: int = Field(default=32000, ge=1000)  # tokens per map prompt
    graph_global_max_reduce_budget: int = Field(default=32000, ge=1000)  # tokens of the reduce prompt
    graph_global_max_concurrency: int = Field(default=8, ge=1)  # map calls in flight per question
    # DRIFT search (librarian.graph.query.drift_search): community reports the primer reads, follow-up
    # questions answered by local search per step, and how many steps (local searches = steps x follow-ups)
    graph_drift_primer_k: int = Field(default=5, ge=1, le=50)
    graph_drift_followups: int = Field(default=3, ge=1, le=10)
    graph_drift_depth: int = Field(default=2, ge=1, le=5)

    # --- chat model
    chat_model: str | None = None
    # Any OpenAI-compatible server; with it, OPENAI_API_KEY is optional (local servers need none)
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

    # --- server
    # Browser origins (comma-separated) that may call the API cross-origin; the web app at `/` is
    # same-origin and needs none. Default: Agent Chat UI's dev server and LangGraph Studio. `*`: any
    # origin; empty: none.
    cors_origins: str = "http://localhost:3000,https://smith.langchain.com"

    # --- page images (GET /orgs/{org}/documents/docs/{name}/pages/{n}.png, docs/serving.md)
    # Renderer processes; renders of one organization at once (its other requests wait, never another
    # organization's); the longest a request waits for its page, queue included, before a 503 (its
    # render is stopped, as when the client goes away).
    page_render_workers: int = Field(default=2, ge=1, le=32)
    page_render_concurrency_per_org: int = Field(default=1, ge=1)
    page_render_timeout_s: float = Field(default=30.0, gt=0)
    # Largest image, width x height pixels: a page that would be larger is rendered smaller.
    page_max_pixels: int = Field(default=6_000_000, ge=160_000)
    # Rendered pages kept on local disk (`data_dir/page-cache`), least recently used dropped first,
    # per organization and overall; 0 keeps none.
    page_cache_max_bytes: int = Field(default=512 * 1024 * 1024, ge=0)
    page_cache_max_bytes_per_org: int = Field(default=64 * 1024 * 1024, ge=0)

    def validate_providers(self) -> Settings:
        """Raise ConfigError naming the missing variable for any chosen cloud provider."""
        needs: list[tuple[bool, str | None, str]] = [
            (self.parser == "reducto", self.reducto_api_key, "REDUCTO_API_KEY"),
            (self.dense_embedder == "openai", self.openai_api_key or self.openai_base_url, "OPENAI_API_KEY"),
            (self.sparse_embedder == "pinecone", self.pinecone_api_key, "PINECONE_API_KEY"),
            (self.vector_index == "pinecone", self.pinecone_api_key, "PINECONE_API_KEY"),
            (self.vector_index == "pgvector", self.postgres_url, "LIBRARIAN_POSTGRES_URL"),
            (self.reranker == "pinecone", self.pinecone_api_key, "PINECONE_API_KEY"),
            (self.file_store == "s3", self.s3_bucket, "LIBRARIAN_S3_BUCKET"),
            (self.reranker == "cross-encoder", self.rerank_model_path, "LIBRARIAN_RERANK_MODEL_PATH"),
        ]
        for chosen, value, variable in needs:
            if chosen and not value:
                raise ConfigError(f"{variable} is not set, but a provider that needs it was chosen")
        self._check_chat_model()
        self.cors_origin_list()  # raises on a malformed origin
        for choice, name in ((self.graph_extractor, "EXTRACTOR"), (self.graph_summarizer, "SUMMARIZER")):
            if choice == "llm" and not self.chat_model:
                raise ConfigError(f"LIBRARIAN_CHAT_MODEL is not set, but LIBRARIAN_GRAPH_{name}=llm needs it")
        if self.reranker == "cohere" and not self.cohere_api_key:
            raise ConfigError(
                "COHERE_API_KEY (or CO_API_KEY) is not set, but LIBRARIAN_RERANKER=cohere needs it"
            )
        if self.reranker == "llm" and not self.chat_model:
            raise ConfigError("LIBRARIAN_CHAT_MODEL is not set, but LIBRARIAN_RERANKER=llm needs it")
        if self.support_judge == "llm" and not self.chat_model:
            raise ConfigError("LIBRARIAN_CHAT_MODEL is not set, but LIBRARIAN_SUPPORT_JUDGE=llm needs it")
        if self.upsert_batch_size < 1 or self.embed_batch_size < 1 or self.ingest_concurrency < 1:
            raise ConfigError("batch sizes and LIBRARIAN_INGEST_CONCURRENCY must be at least 1")
        return self

    def chat_provider(self) -> str | None:
        """The provider `init_chat_model` will use for `chat_model` (None: it cannot tell)."""
        model = (self.chat_model or "").strip()
        if ":" in model:
            return model.split(":", 1)[0].strip().replace("-", "_").lower()
        lowered = model.lower()
        if lowered.startswith(_OPENAI_MODEL_PREFIXES):
            return "openai"
        return "other" if lowered.startswith(_OTHER_MODEL_PREFIXES) else None

    def chat_api_key(self) -> str | None:
        """The key to hand an OpenAI chat model: `OPENAI_API_KEY`, else a placeholder when it talks to
        a server at `LIBRARIAN_CHAT_BASE_URL`. None for other providers (they read their own)."""
        if self.chat_provider() != "openai":
            return None
        return self.openai_api_key or (NO_KEY_NEEDED if self.chat_base_url else None)

    def embedding_api_key(self) -> str | None:
        """The OpenAI embedder's key: `OPENAI_API_KEY`, else a placeholder with a base URL."""
        return self.openai_api_key or (NO_KEY_NEEDED if self.openai_base_url else None)

    def _check_chat_model(self) -> None:
        """The chat model can be built: a provider, its LangChain package, its key (one line each)."""
        if not self.chat_model:
            return
        provider = self.chat_provider()
        if provider is None:
            raise ConfigError(
                f"LIBRARIAN_CHAT_MODEL={self.chat_model!r} names no provider: write provider:model, "
                "e.g. openai:gpt-4.1-mini"
            )
        package = _CHAT_PROVIDER_PACKAGES.get(provider)
        if package and importlib.util.find_spec(package.replace("-", "_")) is None:
            raise ConfigError(
                f"LIBRARIAN_CHAT_MODEL={self.chat_model} needs the {package} package: pip install {package}"
            )
        if provider == "openai" and not self.chat_api_key():
            raise ConfigError(
                f"OPENAI_API_KEY is not set, but LIBRARIAN_CHAT_MODEL={self.chat_model} needs it "
                "(a local OpenAI-compatible server at LIBRARIAN_CHAT_BASE_URL needs none)"
            )

    def cors_origin_list(self) -> tuple[str, ...]:
        """`cors_origins` as origins (`scheme://host[:port]`, or `*`); ConfigError on a malformed one."""
        origins = tuple(o.strip().rstrip("/") for o in self.cors_origins.split(",") if o.strip())
        for origin in origins:
            parts = urlsplit(origin)
            if origin != "*" and (
                parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query
            ):
                raise ConfigError(
                    f"LIBRARIAN_CORS_ORIGINS: {origin!r} is not an origin (scheme://host[:port], or *)"
                )
        return origins

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
    """Read settings from the environment (plus explicit overrides) and validate providers.

    An invalid value is a `SettingsError` naming its variable in one line (start-up prints it).
    """
    try:
        settings = Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise SettingsError(_one_line(exc)) from None
    return settings.validate_providers()


def _one_line(exc: ValidationError) -> str:
    """The first invalid setting, named by its variable, with pydantic's reason in one line."""
    error = exc.errors()[0]
    field = str(error["loc"][0]) if error.get("loc") else "settings"
    variable = field if field.isupper() else f"LIBRARIAN_{field.upper()}"
    value = error.get("input")
    shown = f"={value!r}" if isinstance(value, str | int | float) else ""
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    reason = " ".join(str(error["msg"]).split())
    return f"{variable}{shown} is invalid: {field.lower()}: {reason}{more}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Process-wide settings, read once."""
    return load_settings()
