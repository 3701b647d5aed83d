"""Sparse embeddings from Pinecone Inference (`pinecone-sparse-english-v0`), the production sparse model.

The model embeds passages and queries differently, so `input_type` is always sent: writing with
"passage" and searching with "query" is part of the embedding contract, not an optimisation.
"""

from __future__ import annotations

from pinecone import Pinecone

from librarian.embeddings.base import SparseVector
from librarian.errors import ConfigError
from librarian.index.pinecone import pinecone_errors

MAX_INPUTS_PER_CALL = 96  # Pinecone's per-request input limit for its hosted embedding models


class PineconeSparseEmbedder:
    """`SparseEmbedder` over `pc.inference.embed`; over-long inputs are cut at the end."""

    def __init__(
        self,
        api_key: str,
        host: str | None = None,
        model: str = "pinecone-sparse-english-v0",
        *,
        batch_size: int = MAX_INPUTS_PER_CALL,
    ) -> None:
        if not api_key:
            raise ConfigError("PINECONE_API_KEY is not set, but Pinecone sparse embeddings were chosen")
        if not 1 <= batch_size <= MAX_INPUTS_PER_CALL:
            raise ConfigError(f"Pinecone embed batches must hold 1 to {MAX_INPUTS_PER_CALL} inputs")
        self.model_id = model
        self._batch_size = batch_size
        self._pc = Pinecone(api_key=api_key, host=host)

    def embed_documents(self, texts: list[str]) -> list[SparseVector]:
        return self._embed(texts, input_type="passage")

    def embed_query(self, text: str) -> SparseVector:
        return self._embed([text], input_type="query")[0]

    def _embed(self, texts: list[str], *, input_type: str) -> list[SparseVector]:
        vectors: list[SparseVector] = []
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            with pinecone_errors("sparse embedding"):
                response = self._pc.inference.embed(
                    model=self.model_id,
                    inputs=batch,
                    parameters={"input_type": input_type, "truncate": "END"},
                )
            if len(response.data) != len(batch):
                raise ConfigError(
                    f"Pinecone returned {len(response.data)} embeddings for {len(batch)} inputs"
                )
            for item in response.data:
                if getattr(item, "vector_type", "sparse") != "sparse":
                    raise ConfigError(f"Pinecone model {self.model_id!r} is not a sparse model")
                vectors.append(
                    SparseVector(indices=list(item.sparse_indices), values=list(item.sparse_values))
                )
        return vectors
