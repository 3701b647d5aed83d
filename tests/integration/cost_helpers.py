"""Shared by the cost ledger and budget tests: a stack whose every model is the OpenAI wire server."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from librarian.stack import Stack
from services.documents import DocumentService
from services.graph_index_service import GraphIndexService

CAROL = b"Ebenezer Scrooge employs Bob Cratchit in London. Jacob Marley warns Scrooge on Christmas Eve."
FEZZIWIG = b"Old Fezziwig hosts a ball in London. Dick Wilkins dances with the Fezziwig daughters."


def model_stack(settings: Any, server: Any, **extra: Any) -> Stack:
    """Chat extraction, chat summaries and OpenAI embeddings, all served by `server`."""
    return Stack(
        settings.model_copy(
            update={
                "graph_extractor": "llm",
                "graph_summarizer": "llm",
                "chat_model": "openai:gpt-test",
                "chat_base_url": server.base_url,
                "openai_api_key": "sk-test",
                "dense_embedder": "openai",
                "openai_base_url": server.base_url,
                "openai_embedding_dimension": 8,
                **extra,
            }
        )
    )


class Library:
    """One organization's documents and graph builds on a stack, with one checkpointer."""

    def __init__(self, stack: Stack, org: str = "acme") -> None:
        self.stack, self.org = stack, org
        saver = InMemorySaver()
        self.documents = DocumentService(stack, saver)
        self.graphs = GraphIndexService(stack, saver)

    def add(self, filename: str, data: bytes) -> str:
        path = self.documents.upload(self.org, filename, data)
        assert self.documents.ingest(self.org, path).status == "indexed"
        return path

    def build(self, **kwargs: Any) -> dict[str, Any]:
        return self.graphs.build(self.org, **kwargs)
