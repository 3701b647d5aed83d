"""Dense embeddings from OpenAI (or any OpenAI-compatible server via `base_url`).

The configured dimension is part of the index's embedding contract, so every returned vector is
checked against it: a server that ignores `dimensions`, or a model swapped behind the same name,
must fail loudly instead of writing vectors from another embedding space.

Each response's `usage` is recorded in the cost ledger as the `embed` phase of the organization whose
`cost_scope` is open (`librarian.costs`); outside a scope nothing is recorded.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import openai

from librarian.costs.scope import record_usage
from librarian.errors import ConfigError, LibrarianError, TransientProviderError

MAX_INPUTS_PER_CALL = 2048  # OpenAI's per-request limit on `input` items


@contextmanager
def openai_errors(what: str) -> Iterator[None]:
    """Map SDK errors to ours: retryable ones for the graph's retry policy, the rest for people."""
    try:
        yield
    except openai.APIConnectionError as exc:  # includes APITimeoutError
        raise TransientProviderError(f"OpenAI {what} failed: could not reach the server ({exc})") from exc
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        raise ConfigError(f"OpenAI {what} was refused ({exc.status_code}): check OPENAI_API_KEY") from exc
    except openai.NotFoundError as exc:
        raise ConfigError(f"OpenAI {what} failed: model or endpoint not found; check the settings") from exc
    except openai.APIStatusError as exc:
        if exc.status_code in (408, 409, 429) or exc.status_code >= 500:
            raise TransientProviderError(f"OpenAI {what} failed with {exc.status_code}; retry later") from exc
        raise LibrarianError(f"OpenAI {what} was rejected ({exc.status_code}): {exc.message}") from exc


class OpenAIDenseEmbedder:
    """`DenseEmbedder` over the `openai` SDK's embeddings endpoint, in batches of `batch_size`."""

    def __init__(
        self,
        api_key: str,
        model: str,
        dimension: int,
        base_url: str | None = None,
        batch_size: int = 100,
        *,
        max_retries: int = 2,
        timeout: float = 60.0,
    ) -> None:
        if not api_key:
            raise ConfigError("OPENAI_API_KEY is not set, but OpenAI embeddings were chosen")
        if dimension < 1:
            raise ConfigError("the embedding dimension must be at least 1")
        if not 1 <= batch_size <= MAX_INPUTS_PER_CALL:
            raise ConfigError(f"the embedding batch size must be 1 to {MAX_INPUTS_PER_CALL}")
        self.model_id = model
        self.dimension = dimension
        self._batch_size = batch_size
        # Only the text-embedding-3 family accepts `dimensions`; other servers may reject it.
        self._send_dimensions = model.startswith("text-embedding-3")
        self._client = openai.OpenAI(
            api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout
        )

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            vectors.extend(self._embed_batch(texts[start : start + self._batch_size]))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self._embed_batch([text])[0]

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        extra = {"dimensions": self.dimension} if self._send_dimensions else {}
        started = time.perf_counter()
        with openai_errors("embedding"):
            response = self._client.embeddings.create(model=self.model_id, input=batch, **extra)
        usage = getattr(response, "usage", None)  # the cost ledger's `embed` phase, when a scope is open
        record_usage(getattr(usage, "prompt_tokens", 0) or 0, 0, time.perf_counter() - started, phase="embed")
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise LibrarianError(f"OpenAI returned {len(data)} embeddings for {len(batch)} inputs")
        vectors = [list(item.embedding) for item in data]
        for vector in vectors:
            if len(vector) != self.dimension:
                raise ConfigError(
                    f"model {self.model_id!r} returned {len(vector)}-d vectors, but the configured "
                    f"dimension is {self.dimension}: set LIBRARIAN_OPENAI_EMBEDDING_DIMENSION to match "
                    "the model (a new dimension needs a new index)"
                )
        return vectors
