"""Settings: embedded defaults, and a clear start-up error naming the variable a provider needs."""

from __future__ import annotations

import pytest

from librarian.errors import ConfigError
from librarian.settings import load_settings


def test_defaults_are_the_embedded_providers(settings):
    assert (settings.file_store, settings.parser, settings.dense_embedder) == ("local", "local", "minilm")
    assert settings.sparse_embedder == "local" and settings.vector_index == "lancedb"
    assert settings.reranker == "none"  # the local reranker did not earn its cost (README)
    assert settings.sparse_idf == "namespace"
    assert settings.postgres_url is None and settings.chat_model is None


@pytest.mark.parametrize(
    ("choice", "variable"),
    [
        ({"parser": "reducto"}, "REDUCTO_API_KEY"),
        ({"dense_embedder": "openai"}, "OPENAI_API_KEY"),
        ({"sparse_embedder": "pinecone"}, "PINECONE_API_KEY"),
        ({"vector_index": "pinecone"}, "PINECONE_API_KEY"),
        ({"file_store": "s3"}, "LIBRARIAN_S3_BUCKET"),
        ({"reranker": "cross-encoder"}, "LIBRARIAN_RERANK_MODEL_PATH"),
    ],
)
def test_cloud_provider_without_its_key_names_the_variable(settings, monkeypatch, choice, variable):
    for name in ("REDUCTO_API_KEY", "OPENAI_API_KEY", "PINECONE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match=variable):
        load_settings(data_dir=settings.data_dir, **choice)


def test_keys_are_read_from_the_standard_variables(settings, monkeypatch):
    monkeypatch.setenv("PINECONE_API_KEY", "pc-key")
    monkeypatch.setenv("LIBRARIAN_VECTOR_INDEX", "pinecone")
    loaded = load_settings(data_dir=settings.data_dir)
    assert loaded.vector_index == "pinecone" and loaded.pinecone_api_key == "pc-key"


def test_invalid_choice_is_rejected(settings, monkeypatch):
    monkeypatch.setenv("LIBRARIAN_VECTOR_INDEX", "qdrant")
    with pytest.raises(ValueError, match="vector_index"):
        load_settings(data_dir=settings.data_dir)


@pytest.mark.parametrize(
    "name", ["Document-Chunks", "-chunks", "chunks-", "a" * 46, "", "doc_chunks", "doc.chunks"]
)
def test_a_pinecone_index_name_pinecone_would_refuse_fails_at_start_up(settings, monkeypatch, name):
    monkeypatch.setenv("LIBRARIAN_PINECONE_INDEX_NAME", name)
    with pytest.raises(ValueError, match="LIBRARIAN_PINECONE_INDEX_NAME"):
        load_settings(data_dir=settings.data_dir)


@pytest.mark.parametrize("name", ["document-chunks", "a", "a" * 45, "v2-docs-9"])
def test_pinecone_index_names_within_its_rule_pass(settings, monkeypatch, name):
    monkeypatch.setenv("LIBRARIAN_PINECONE_INDEX_NAME", name)
    assert load_settings(data_dir=settings.data_dir).pinecone_index_name == name
