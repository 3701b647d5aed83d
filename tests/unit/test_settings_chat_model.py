"""Chat-model and invalid settings fail at start in one line; a local OpenAI-compatible server needs
no key (issue 23 §6.1).

Start-up (`auth.startup_checks`) prints any `ConfigError` from `load_settings` as one line, so each
case here is one such line: the chat model's provider, package and key are checked by the settings,
not discovered by `init_chat_model` as a traceback while the server loads the graphs.
"""

from __future__ import annotations

import pytest

from librarian.errors import ConfigError
from librarian.settings import NO_KEY_NEEDED, load_settings

LOCAL = "http://127.0.0.1:8000/v1"


@pytest.fixture
def keyless(settings, monkeypatch):
    for name in ("OPENAI_API_KEY", "LIBRARIAN_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return lambda **choice: load_settings(data_dir=settings.data_dir, **choice)


@pytest.mark.parametrize("model", ["openai:gpt-4.1-mini", "gpt-4o-mini"])
def test_openai_chat_model_without_key_or_base_url_names_the_key(keyless, model):
    with pytest.raises(ConfigError, match=f"OPENAI_API_KEY is not set, but LIBRARIAN_CHAT_MODEL={model}"):
        keyless(chat_model=model)


def test_a_base_url_makes_the_key_optional_with_a_placeholder_for_the_sdk(keyless):
    loaded = keyless(chat_model="openai:qwen2.5", chat_base_url=LOCAL)
    assert loaded.chat_api_key() == NO_KEY_NEEDED


def test_a_set_key_is_used_with_or_without_base_url(keyless, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    assert keyless(chat_model="openai:gpt-4.1-mini").chat_api_key() == "sk-real"
    assert keyless(chat_model="openai:gpt-4.1-mini", chat_base_url=LOCAL).chat_api_key() == "sk-real"


def test_other_providers_read_their_own_keys(keyless):
    assert keyless().chat_api_key() is None
    assert keyless(chat_model="fireworks:llama-v3", chat_base_url=LOCAL).chat_api_key() is None


def test_openai_embeddings_at_a_base_url_need_no_key(keyless):
    loaded = keyless(dense_embedder="openai", openai_base_url=LOCAL)
    assert loaded.embedding_api_key() == NO_KEY_NEEDED
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        keyless(dense_embedder="openai")


def test_a_model_name_without_provider_is_named(keyless):
    with pytest.raises(ConfigError, match="LIBRARIAN_CHAT_MODEL='llama3' names no provider"):
        keyless(chat_model="llama3")


def test_a_missing_provider_package_is_named(keyless, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "langchain_anthropic" else real(name, *a),
    )
    with pytest.raises(ConfigError, match="needs the langchain-anthropic package"):
        keyless(chat_model="anthropic:claude-sonnet-4")


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("LIBRARIAN_VECTOR_INDEX", "qdrant", "LIBRARIAN_VECTOR_INDEX='qdrant' is invalid: vector_index"),
        ("LIBRARIAN_TOP_K", "many", "LIBRARIAN_TOP_K='many' is invalid: top_k"),
        (
            "LIBRARIAN_CORS_ORIGINS",
            "localhost:3000",
            "LIBRARIAN_CORS_ORIGINS: 'localhost:3000' is not an origin",
        ),
    ],
)
def test_an_invalid_value_is_one_config_error_line(keyless, monkeypatch, variable, value, named):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as info:
        keyless()
    assert named in str(info.value) and "\n" not in str(info.value)


# These two need the builders to pass the settings' key (the report names the lines to add).


def test_the_chat_model_is_built_without_a_key_for_a_base_url(keyless):
    from librarian.chat_model import chat_model_from_settings

    model = chat_model_from_settings(keyless(chat_model="openai:qwen2.5", chat_base_url=LOCAL))
    assert model.openai_api_key.get_secret_value() == NO_KEY_NEEDED
    assert model.openai_api_base == LOCAL


def test_the_openai_embedder_is_built_without_a_key_for_a_base_url(keyless):
    from librarian.stack import Stack

    dense = Stack(keyless(dense_embedder="openai", openai_base_url=LOCAL)).dense
    assert dense.model_id == "text-embedding-3-small"
