"""What one run may choose within the server's limits: dense embedder, reranker, top_k, provider options.

A run's choices can come from a client on the LangGraph server, so each is bounded by settings:
`LIBRARIAN_VECTOR_QUERY_EMBEDDERS` and `LIBRARIAN_VECTOR_QUERY_RERANKERS` list the names a run may pick
besides the configured ones, `LIBRARIAN_VECTOR_QUERY_MAX_TOP_K` caps top_k. Models are built by the
same settings-to-class mappings as the configured ones (`Stack.dense`, `rerankers.build_reranker`),
once per stack, so a choice costs a model load once, not per question.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from librarian.embeddings.base import DenseEmbedder
from librarian.retrieval.reranker import Reranker
from librarian.settings import Settings
from librarian.stack import Stack
from librarian.vector_query.errors import VectorQueryOptionError
from librarian.vector_query.tenant_keys import normal_key, refuse_tenant_keys

_DIMENSION_OPTIONS = frozenset({"dimensions", "dimension", "outputdimensionality"})


class _StackWithSettings:
    """The stack as seen by a settings-to-class mapping, with one choice changed.

    Everything but `settings` (the dense model a local reranker reuses, the memo) is the real
    stack's, so a reranker picked by a run shares the stack's loaded models.
    """

    def __init__(self, stack: Stack, **changes: Any) -> None:
        self._stack = stack
        self.settings = stack.settings.model_copy(update=changes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stack, name)


def _choices(field: str) -> tuple[str, ...]:
    return tuple(str(v) for v in get_args(Settings.model_fields[field].annotation))


def _allowed(configured: str, listed: str, field: str, setting: str) -> list[str]:
    """The configured choice plus the listed ones; a listed name that is no choice is a ConfigError."""
    names = [configured]
    for name in (part.strip() for part in listed.split(",")):
        if not name:
            continue
        if name not in _choices(field):
            from librarian.errors import ConfigError

            raise ConfigError(f"{setting} lists {name!r}, which is not one of {', '.join(_choices(field))}")
        if name not in names:
            names.append(name)
    return names


def _check_choice(value: Any, allowed: list[str], what: str, setting: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise VectorQueryOptionError(
            f"run override {what} {value!r} is not allowed on this server; it allows "
            f"{', '.join(repr(n) for n in allowed)} (set {setting} to allow more)"
        )
    return value


def dense_for_run(stack: Stack, name: Any) -> DenseEmbedder:
    """The dense embedder a run named, if the server allows it."""
    s = stack.settings
    allowed = _allowed(
        s.dense_embedder, s.vector_query_embedders, "dense_embedder", "LIBRARIAN_VECTOR_QUERY_EMBEDDERS"
    )
    name = _check_choice(name, allowed, "model", "LIBRARIAN_VECTOR_QUERY_EMBEDDERS")
    if name == s.dense_embedder:
        return stack.dense
    return stack.memo(
        f"vector_query.dense.{name}",
        lambda: Stack.dense.func(_StackWithSettings(stack, dense_embedder=name)),  # type: ignore[attr-defined]
    )


def reranker_for_run(stack: Stack, name: Any) -> Reranker | None:
    """The reranker a run named (None for "none"), if the server allows it."""
    from librarian.retrieval.rerankers import build_reranker, make_reranker

    s = stack.settings
    allowed = _allowed(s.reranker, s.vector_query_rerankers, "reranker", "LIBRARIAN_VECTOR_QUERY_RERANKERS")
    name = _check_choice(name, allowed, "reranker", "LIBRARIAN_VECTOR_QUERY_RERANKERS")
    if name == "none":
        return None
    if name == s.reranker:
        return make_reranker(stack)
    return stack.memo(
        f"vector_query.reranker.{name}",
        lambda: build_reranker(_StackWithSettings(stack, reranker=name)),  # type: ignore[arg-type]
    )


def check_top_k_limit(stack: Stack, top_k: int, where: str) -> int:
    """`top_k` if within LIBRARIAN_VECTOR_QUERY_MAX_TOP_K, else an error naming the limit."""
    limit = stack.settings.vector_query_max_top_k
    if top_k > limit:
        raise VectorQueryOptionError(
            f"{where} {top_k} is above this server's limit of {limit} (LIBRARIAN_VECTOR_QUERY_MAX_TOP_K)"
        )
    return top_k


def parse_provider_options(value: Any, where: str = "provider_options") -> dict[str, dict[str, Any]]:
    """Mastra's `providerOptions`: `{provider: {option: value}}`, checked for shape and tenant keys."""
    if not value:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) for v in value.values()):
        raise VectorQueryOptionError(f"{where} must map each provider name to a mapping of options")
    refuse_tenant_keys(value, where)
    parsed: dict[str, dict[str, Any]] = {}
    for provider, options in value.items():
        for key, option in options.items():
            if normal_key(key) not in _DIMENSION_OPTIONS:
                raise VectorQueryOptionError(
                    f"{where}[{provider!r}].{key} is refused: Librarian's embedders take no per-call options "
                    "but the output dimension (dimensions / outputDimensionality), which must equal the "
                    "store's"
                )
            if isinstance(option, bool) or not isinstance(option, int) or option < 1:
                raise VectorQueryOptionError(f"{where}[{provider!r}].{key} must be a positive integer")
        parsed[str(provider)] = dict(options)
    return parsed


def check_provider_options(options: Mapping[str, Mapping[str, Any]], dense: DenseEmbedder) -> None:
    """An output dimension other than the embedder's would query the index in another space: refused."""
    for provider, section in options.items():
        for key, dimension in section.items():
            if dimension != dense.dimension:
                raise VectorQueryOptionError(
                    f"provider_options[{provider!r}].{key}={dimension} is refused: the query embedder "
                    f"{dense.model_id} gives {dense.dimension}-d vectors, as the store's embedding contract "
                    "records, and a vector of another size cannot be compared with them"
                )
