"""The configured chat model: one builder for the agent, graph extraction, rerankers and judges.

`LIBRARIAN_CHAT_MODEL` names an `init_chat_model` model (e.g. `openai:gpt-4.1-mini`) and
`LIBRARIAN_CHAT_BASE_URL` points it at any OpenAI-compatible server. Unset, Librarian runs offline and
callers fall back to their extractive paths; a feature that cannot work without a model asks for one
with `require_chat_model`, which names the setting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from librarian.errors import ConfigError
from librarian.settings import Settings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


def chat_model_from_settings(settings: Settings, **kwargs: Any) -> BaseChatModel | None:
    """`init_chat_model` from the settings, or None offline. `kwargs` (e.g. `temperature=0` for JSON
    extraction) go to the model; the base URL comes from the settings only."""
    if not settings.chat_model:
        return None
    from langchain.chat_models import init_chat_model

    if settings.chat_base_url:
        kwargs["base_url"] = settings.chat_base_url
    return init_chat_model(settings.chat_model, **kwargs)


def require_chat_model(settings: Settings, needed_by: str, **kwargs: Any) -> BaseChatModel:
    """The configured chat model, or a `ConfigError` naming the setting that `needed_by` requires."""
    model = chat_model_from_settings(settings, **kwargs)
    if model is None:
        raise ConfigError(f"LIBRARIAN_CHAT_MODEL is not set, but {needed_by} needs it")
    return model
