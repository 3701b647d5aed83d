"""How values are stored the same way on both engines: embeddings as float32 bytes, times as ISO text."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def to_blob(vector: np.ndarray | Sequence[float] | None) -> bytes | None:
    """float32 bytes of the L2-normalised vector (so a dot product is a cosine)."""
    if vector is None:
        return None
    array = np.asarray(vector, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(array))
    if norm > 0:
        array = array / norm
    return array.astype(np.float32).tobytes()


def from_blob(blob: Any) -> np.ndarray | None:
    if blob is None:
        return None
    return np.frombuffer(bytes(blob), dtype=np.float32).copy()


def stack(vectors: list[np.ndarray]) -> np.ndarray:
    """Rows of a matrix; an empty (0, 0) matrix when there are none, so callers need no special case."""
    if not vectors:
        return np.zeros((0, 0), dtype=np.float32)
    return np.vstack(vectors).astype(np.float32)
