"""OpenAIDenseEmbedder and ChatOpenAI through the real SDKs against the OpenAI wire server."""

from __future__ import annotations

import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from librarian.embeddings.openai import OpenAIDenseEmbedder
from librarian.errors import ConfigError, TransientProviderError
from tests.wire.openai_server import TEST_API_KEY as OPENAI_API_KEY
from tests.wire.openai_server import OpenAIWireServer, TextReply, ToolCallReply, expected_embedding


def embedder(server: OpenAIWireServer, model: str = "text-embedding-3-small", dimension: int = 32, **kw):
    return OpenAIDenseEmbedder(OPENAI_API_KEY, model, dimension, base_url=server.base_url, **kw)


# ----------------------------------------------------------------------------- embeddings


def test_embeddings_roundtrip_through_base64(openai_server):
    dense = embedder(openai_server)
    texts = ["alpha", "beta", "gamma"]

    vectors = dense.embed_documents(texts)

    (sent,) = openai_server.requests_to("/embeddings")
    assert sent.body["encoding_format"] == "base64"  # the SDK's default; the server must honour it
    assert sent.body["dimensions"] == 32 and sent.body["input"] == texts
    assert sent.headers["authorization"] == f"Bearer {OPENAI_API_KEY}"
    for text, vector in zip(texts, vectors, strict=True):
        assert vector == pytest.approx(expected_embedding("text-embedding-3-small", text, 32), abs=1e-7)
    assert dense.embed_query("beta") == pytest.approx(vectors[1])
    assert (dense.model_id, dense.dimension) == ("text-embedding-3-small", 32)


def test_float_encoding_matches_base64(openai_server):
    client = openai.OpenAI(api_key=OPENAI_API_KEY, base_url=openai_server.base_url)
    response = client.embeddings.create(
        model="text-embedding-3-small", input=["alpha"], encoding_format="float"
    )
    assert response.data[0].embedding == pytest.approx(
        embedder(openai_server, dimension=1536).embed_query("alpha")
    )


def test_embeddings_go_in_batches_and_keep_order(openai_server):
    dense = embedder(openai_server, dimension=8, batch_size=100)
    texts = [f"text {i}" for i in range(250)]

    vectors = dense.embed_documents(texts)

    assert [len(r.body["input"]) for r in openai_server.requests_to("/embeddings")] == [100, 100, 50]
    assert vectors[249] == pytest.approx(
        expected_embedding("text-embedding-3-small", "text 249", 8), abs=1e-7
    )
    assert dense.embed_documents([]) == []


def test_dimension_mismatch_is_a_clear_config_error(openai_server):
    # A model outside the text-embedding-3 family gets no `dimensions`; this server answers 8-d.
    dense = embedder(openai_server, model="local-embedder", dimension=16)

    with pytest.raises(ConfigError, match=r"returned 8-d vectors.*dimension is 16"):
        dense.embed_query("hello")
    assert "dimensions" not in openai_server.requests_to("/embeddings")[0].body


def test_server_errors_are_transient_and_retried_by_the_sdk(openai_server):
    openai_server.fail_next(1, status=503)
    assert len(embedder(openai_server, max_retries=2).embed_query("x")) == 32
    assert [r.status for r in openai_server.requests_to("/embeddings")] == [503, 200]

    openai_server.fail_next(1, status=503)
    with pytest.raises(TransientProviderError):
        embedder(openai_server, max_retries=0).embed_query("x")

    openai_server.fail_next(3, status=429)
    with pytest.raises(TransientProviderError):
        embedder(openai_server, max_retries=2).embed_query("x")


def test_unreachable_server_is_transient():
    dense = OpenAIDenseEmbedder(OPENAI_API_KEY, "m", 8, base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(TransientProviderError):
        dense.embed_query("x")


def test_rejected_key_is_a_config_error(openai_server):
    dense = OpenAIDenseEmbedder("sk-wrong", "text-embedding-3-small", 8, base_url=openai_server.base_url)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        dense.embed_query("x")


# ----------------------------------------------------------------------------- chat


@tool
def search_documents(query: str, top_k: int = 8) -> str:
    """Search this organization's documents."""
    return "Refunds take 14 days."


def chat_model(server: OpenAIWireServer, **kwargs) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-4o-mini", base_url=server.base_url, api_key="sk-test", max_retries=0, **kwargs
    )


def test_scripted_tool_call_then_text(openai_server):
    openai_server.chat_script.append(
        ToolCallReply("search_documents", {"query": "refund policy"}, call_id="call_1")
    )
    openai_server.chat_script.append(TextReply("Refunds take 14 days."))
    model = chat_model(openai_server).bind_tools([search_documents])

    first = model.invoke([HumanMessage("How long do refunds take?")])
    assert first.tool_calls == [
        {"name": "search_documents", "args": {"query": "refund policy"}, "id": "call_1", "type": "tool_call"}
    ]
    tool_message = ToolMessage(search_documents.invoke(first.tool_calls[0]["args"]), tool_call_id="call_1")
    second = model.invoke([HumanMessage("How long do refunds take?"), first, tool_message])

    assert second.content == "Refunds take 14 days." and not second.tool_calls
    first_request, second_request = openai_server.chat_requests
    assert first_request["tools"][0]["function"]["name"] == "search_documents"
    assert second_request["messages"][-1] == {
        "role": "tool",
        "content": "Refunds take 14 days.",
        "tool_call_id": "call_1",
    }


def test_streaming_tool_call_and_text(openai_server):
    openai_server.chat_script.append(
        [
            ToolCallReply("search_documents", {"query": "a"}),
            ToolCallReply("search_documents", {"query": "b", "top_k": 3}),
        ]
    )
    openai_server.chat_script.append(TextReply("Two searches done."))
    model = chat_model(openai_server, streaming=True).bind_tools([search_documents])

    chunks = list(model.stream("search twice"))
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert [c["args"] for c in merged.tool_calls] == [{"query": "a"}, {"query": "b", "top_k": 3}]

    text = "".join(str(c.content) for c in model.stream("and now?"))
    assert text == "Two searches done."
    assert all(r["stream"] is True for r in openai_server.chat_requests)


def test_default_reply_and_callable_script_entries(openai_server):
    openai_server.default_reply = TextReply("fallback")
    openai_server.chat_script.append(lambda body: TextReply(f"saw {len(body['messages'])} message(s)"))
    model = chat_model(openai_server)

    assert model.invoke("hi").content == "saw 1 message(s)"
    reply = model.invoke("again")
    assert isinstance(reply, AIMessage) and reply.content == "fallback"
