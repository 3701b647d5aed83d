"""The configured chat model: one builder for the agent, graph extraction, rerankers and judges.

`LIBRARIAN_CHAT_MODEL` names an `init_chat_model` model (e.g. `openai:gpt-4.1-mini`) and
`LIBRARIAN_CHAT_BASE_URL` points it at any OpenAI-compatible server. Unset, Librarian runs offline and
callers fall back to their extractive paths; a feature that cannot work without a model asks for one
with `require_chat_model`, which names the setting.

Only the agent's own answer may stream to the user. Every other call (graph map/reduce, query parsing,
the support judge, rerankers, extraction, summaries) goes through `internal_model`, which keeps it out
of the run's `messages`/`messages-tuple`/`events` streams and still in traces (`librarian.internal_model`).
The engines wrap the model they are given; `require_chat_model` hands out a wrapped one, since a feature
that needs a model for its own work is an internal caller by definition.

Every model built here carries the cost ledger's callback handler (`librarian.costs.handler`): its
calls, tokens and time are recorded against the organization and phase whose `cost_scope` is open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from librarian.errors import ConfigError
from librarian.settings import Settings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import Runnable


def chat_model_from_settings(settings: Settings, **kwargs: Any) -> BaseChatModel | None:
    """`init_chat_model` from the settings, or None offline. `kwargs` (e.g. `temperature=0` for JSON
    extraction) go to the model; the base URL comes from the settings only."""
    if not settings.chat_model:
        return None
    from langchain.chat_models import init_chat_model

    if settings.chat_base_url:
        kwargs["base_url"] = settings.chat_base_url
    if (key := settings.chat_api_key()) is not None:  # a placeholder for a keyless local server
        kwargs.setdefault("api_key", key)
    from librarian.costs.handler import USAGE_RECORDER

    # every call is recorded in the cost ledger scope current where it is made (librarian.costs)
    kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), USAGE_RECORDER]
    return init_chat_model(settings.chat_model, **kwargs)


def require_chat_model(settings: Settings, needed_by: str, **kwargs: Any) -> Runnable:
    """The configured chat model for `needed_by`'s internal calls (`internal_model`), or a `ConfigError`
    naming the setting that `needed_by` requires."""
    model = chat_model_from_settings(settings, **kwargs)
    if model is None:
        raise ConfigError(f"LIBRARIAN_CHAT_MODEL is not set, but {needed_by} needs it")
    return internal_model(model)


def internal_model(model: Any) -> Any:
    """`model` bound so that its calls never reach the run's stream (the agent's answer is the only
    model output a user sees); tracers still record them. None stays None; wrapping twice is a no-op.
    How and why: `librarian.internal_model`."""
    if model is None:
        return None
    from librarian.internal_model import internal  # lazy: langchain_core's runnables load slowly

    return internal(model)
