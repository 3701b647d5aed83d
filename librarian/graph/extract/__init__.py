"""Extractors behind one interface: `local` (spaCy, offline default) and `llm` (any chat model)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from librarian.chat_model import chat_model_from_settings
from librarian.graph.extract.base import Extractor
from librarian.settings import Settings


@lru_cache(maxsize=1)
def local_extractor() -> Extractor:
    from librarian.graph.extract.local import LocalExtractor

    return LocalExtractor()


def chat_model(settings: Settings) -> Any:
    """The configured chat model at temperature 0 (JSON out); None when unset."""
    return chat_model_from_settings(settings, temperature=0)


def extractor_key(settings: Settings) -> str:
    """The cache key of the configured extractor, without loading any model (cheap: used to find stale
    documents). Equal to `get_extractor(settings).cache_key`."""
    if settings.graph_extractor == "llm":
        from librarian.graph.extract.llm import llm_cache_key

        return llm_cache_key(settings.chat_model or "")
    from librarian.graph.extract.local import local_cache_key

    return local_cache_key()


def get_extractor(settings: Settings) -> Extractor:
    """The configured extractor (the spaCy model is loaded once per process and shared)."""
    if settings.graph_extractor == "llm":
        from librarian.graph.extract.llm import LLMExtractor

        return LLMExtractor(
            chat_model(settings), model_name=settings.chat_model or "", fallback=local_extractor
        )
    return local_extractor()
