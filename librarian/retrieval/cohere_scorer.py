"""Cohere Rerank (`rerank-v3.5` by default) as a relevance scorer, through the official `cohere` SDK.

Seed 002: Mastra's `rerank()` uses Cohere's reranker for its semantic component when the model is
`rerank-v3.5`. `LIBRARIAN_RERANKER=cohere` puts this scorer inside the weighted fusion
(`librarian.retrieval.rerankers.WeightedReranker`).

Limits, from Cohere's rerank documentation: up to 10,000 documents a request, with a recommendation
against more than 1,000; `max_tokens_per_doc` (default 4,096, rerank-v3.5's context) truncates a
longer document on Cohere's side. We split at 1,000 documents a request and pass the token limit
explicitly, so truncation is a stated choice rather than a server default that may change. The
query (documented maximum 2,048 tokens) is sent as is: we cannot count Cohere's tokens offline,
and a too-long query is refused by Cohere with a 400 that surfaces as `CohereRerankError`.

Scores: relevance in [0, 1], independent per (query, document) pair, so scores from split requests
are comparable. The floor, 0.2, is the project's convention for a [0, 1] relevance (the seed's noise
floor after rerank, adopted for bge, the cross-encoder and the LLM judge): a noise cut, not a
calibrated confidence, and not fitted on any data. We cannot call Cohere here, so no number could be
validated out of sample; measure one on your own labelled queries and pass `floor=`.

Failures are never hidden: the SDK retries 429, 408, 409 and 5xx with its own backoff (honouring
`Retry-After`), and whatever still fails, or a reply that does not score every document, raises
`CohereRerankError`. A reranker that silently returned zeros would look like a ranking and be noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from librarian.errors import LibrarianError

if TYPE_CHECKING:
    import cohere

#: Cohere's recommended maximum of documents in one rerank request (the hard limit is 10,000).
MAX_DOCUMENTS_PER_REQUEST = 1000
#: rerank-v3.5's context length; longer documents are truncated by Cohere to this many tokens.
MAX_TOKENS_PER_DOC = 4096


class CohereRerankError(LibrarianError):
    """Cohere Rerank failed or answered something unusable; the message says which and what to do."""

    code = "rerank_provider_error"


def _status_hint(status: int | None) -> str:
    if status == 401:
        return " (check COHERE_API_KEY)"
    if status == 429:
        return " (rate limited after the SDK's retries; try again later or raise your Cohere plan)"
    if status is not None and status >= 500:
        return " (Cohere is unavailable; try again later)"
    return ""


def _provider_message(body: Any) -> str:
    """The `message` of Cohere's error body, shortened; never headers, never the whole body."""
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"][:300]
    if isinstance(body, str):
        return body[:300]
    return ""


def translate_error(error: Exception, model: str) -> CohereRerankError:
    """One clear error from whatever the SDK or the transport raised."""
    import httpx
    from cohere.core.api_error import ApiError

    if isinstance(error, ApiError):
        status = error.status_code
        detail = _provider_message(error.body)
        return CohereRerankError(
            f"Cohere rerank ({model}) failed with HTTP {status}"
            + (f": {detail}" if detail else "")
            + _status_hint(status)
        )
    if isinstance(error, httpx.TimeoutException):
        return CohereRerankError(
            f"Cohere rerank ({model}) timed out (LIBRARIAN_COHERE_TIMEOUT_S); try again later"
        )
    if isinstance(error, httpx.HTTPError):
        return CohereRerankError(f"Cohere rerank ({model}) could not be reached: {type(error).__name__}")
    return CohereRerankError(f"Cohere rerank ({model}) failed: {type(error).__name__}: {error}")


def scores_from_results(results: Sequence[Any], count: int, model: str) -> list[float]:
    """Scores in document order; a reply that misses a document or leaves [0, 1] is an error.

    The SDK's response models do not validate (they accept what the server sends), so the checks
    that make a score trustworthy live here.
    """
    scores: list[float | None] = [None] * count
    for item in results:
        index, score = getattr(item, "index", None), getattr(item, "relevance_score", None)
        if not isinstance(index, int) or not 0 <= index < count:
            raise CohereRerankError(
                f"Cohere rerank ({model}) returned a result for unknown document {index!r}"
            )
        if not isinstance(score, int | float) or math.isnan(score) or not 0.0 <= score <= 1.0:
            raise CohereRerankError(
                f"Cohere rerank ({model}) returned relevance {score!r} for document {index}; expected [0, 1]"
            )
        scores[index] = float(score)
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        raise CohereRerankError(
            f"Cohere rerank ({model}) scored {count - len(missing)} of {count} documents "
            f"(missing {missing[:5]}{'...' if len(missing) > 5 else ''})"
        )
    return [float(s) for s in scores if s is not None]


class CohereRerankScorer:
    """(query, passages) → Cohere relevance in [0, 1], one request per 1,000 passages."""

    name = "cohere"

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str | None = None,
        model: str = "rerank-v3.5",
        floor: float = 0.2,
        timeout_s: float = 30.0,
        max_retries: int = 2,
        max_tokens_per_doc: int = MAX_TOKENS_PER_DOC,
        max_documents: int = MAX_DOCUMENTS_PER_REQUEST,
    ) -> None:
        if not api_key:
            raise CohereRerankError("CohereRerankScorer needs a Cohere API key (COHERE_API_KEY)")
        if not 1 <= max_documents <= 10_000:
            raise ValueError(
                f"max_documents must be between 1 and 10,000 (Cohere's limit), got {max_documents}"
            )
        self.model = model
        self.floor = floor
        self.max_tokens_per_doc = max_tokens_per_doc
        self.max_documents = max_documents
        # Only pass base_url when set: the SDK's own default reads CO_API_URL, else Cohere's cloud.
        self._client_options: dict[str, Any] = {
            "api_key": api_key,
            "timeout": timeout_s,
            "max_retries": max_retries,
            "log_warning_experimental_features": False,
            **({"base_url": base_url.rstrip("/")} if base_url else {}),
        }
        self._client: cohere.ClientV2 | None = None
        self._async_client: cohere.AsyncClientV2 | None = None

    @property
    def client(self) -> cohere.ClientV2:
        if self._client is None:
            import cohere

            self._client = cohere.ClientV2(**self._client_options)
        return self._client

    @property
    def async_client(self) -> cohere.AsyncClientV2:
        if self._async_client is None:
            import cohere

            self._async_client = cohere.AsyncClientV2(**self._client_options)
        return self._async_client

    def _batches(self, texts: Sequence[str]) -> list[list[str]]:
        step = self.max_documents
        return [list(texts[start : start + step]) for start in range(0, len(texts), step)]

    def _request(self, query: str, batch: list[str]) -> dict[str, Any]:
        return {
            "model": self.model,
            "query": query,
            "documents": batch,
            "top_n": len(batch),
            "max_tokens_per_doc": self.max_tokens_per_doc,
        }

    def score(self, query: str, texts: list[str]) -> list[float]:
        scores: list[float] = []
        for batch in self._batches(texts):
            try:
                response = self.client.rerank(**self._request(query, batch))
            except Exception as error:  # every SDK/transport failure becomes one clear error
                raise translate_error(error, self.model) from error
            scores.extend(scores_from_results(response.results, len(batch), self.model))
        return scores

    async def ascore(self, query: str, texts: list[str]) -> list[float]:
        scores: list[float] = []
        for batch in self._batches(texts):
            try:
                response = await self.async_client.rerank(**self._request(query, batch))
            except Exception as error:
                raise translate_error(error, self.model) from error
            scores.extend(scores_from_results(response.results, len(batch), self.model))
        return scores
