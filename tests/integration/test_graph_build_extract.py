"""Extractors and the LLM summarizer on real parts: the pinned spaCy model, and `ChatOpenAI` against the
local OpenAI-compatible wire server (scripted replies decide what "the model" says)."""

from __future__ import annotations

import json

import pytest
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from librarian.graph.extract import extractor_key, get_extractor, local_extractor
from librarian.graph.extract.llm import LLMExtractor, llm_cache_key
from librarian.graph.extract.local import MODEL_VERSION, local_cache_key, verify_model
from librarian.graph.model import ChunkRef, Community, Edge, Entity
from librarian.graph.summarize import CommunityContext, LLMSummarizer, LocalSummarizer
from services.documents import DocumentService
from services.graph_index_service import GraphIndexService
from tests.wire.openai_server import TextReply


def chunks(*texts: str, path: str = "docs/carol.txt") -> list[ChunkRef]:
    return [ChunkRef(f"{path}:{i}", path, i, 1, None, text) for i, text in enumerate(texts)]


@pytest.fixture(scope="module")
def spacy_extractor():
    return local_extractor()  # loaded once per process


def chat(server) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-test", base_url=server.base_url, api_key="sk-test", max_retries=0, temperature=0
    )


# --- local ----------------------------------------------------------------------------------------


def test_the_pinned_model_verifies_and_names_the_cache_key():
    verify_model()  # the installed files match the pinned release
    assert MODEL_VERSION in local_cache_key() and local_cache_key().startswith("local:spacy-3.8")


def test_local_extraction_names_entities_relations_from_verbs_and_verbatim_claims(spacy_extractor):
    text = "Ebenezer Scrooge employs Bob Cratchit in London. The weather is cold."
    payload = spacy_extractor.extract(chunks(text))
    names = {e["name"]: e for e in payload["entities"]}
    assert {"ebenezer scrooge", "bob cratchit", "london"} <= set(names)
    assert names["ebenezer scrooge"]["type"] == "PERSON" and names["ebenezer scrooge"]["chunks"] == [
        "docs/carol.txt:0"
    ]
    employ = [
        r for r in payload["relations"] if {r["source"], r["target"]} == {"bob cratchit", "ebenezer scrooge"}
    ]
    assert employ and employ[0]["relation"] == "employ" and employ[0]["weight"] == 1.0
    assert [c["description"] for c in payload["claims"]] == [
        "Ebenezer Scrooge employs Bob Cratchit in London."
    ]
    claim = payload["claims"][0]
    assert claim["subject"] == "ebenezer scrooge" and claim["object"] == "bob cratchit"
    assert claim["chunk"] == "docs/carol.txt:0"
    assert payload["extractor"] == spacy_extractor.cache_key == local_cache_key()


def test_local_extraction_keeps_titles_for_the_alias_rule_and_counts_co_occurrence(spacy_extractor):
    payload = spacy_extractor.extract(
        chunks("Mr. Scrooge visits Jacob Marley.", "Mrs. Cratchit cooks. Scrooge visits Jacob Marley again.")
    )
    names = {e["name"] for e in payload["entities"]}
    assert {"mr. scrooge", "scrooge", "jacob marley", "mrs. cratchit"} <= names
    pair = [r for r in payload["relations"] if {r["source"], r["target"]} == {"jacob marley", "scrooge"}]
    assert pair and pair[0]["relation"] == "visit" and pair[0]["chunks"] == ["docs/carol.txt:1"]


def test_local_extraction_drops_junk_names_and_keeps_the_people(spacy_extractor):
    text = (
        "Us and thou went to a film in 2015. Scrooge held his own hand and met other people. "
        "The US sent a man to London. Tiny Tim said: God bless us, every one! "
        "Bob Cratchit laughed, and Fred smiled at Jacob Marley."
    )
    entities = {e["name"]: e for e in spacy_extractor.extract(chunks(text))["entities"]}
    assert {"scrooge", "tiny tim", "bob cratchit", "fred", "jacob marley", "london"} <= set(entities)
    assert entities["us"]["type"] == "GPE" and entities["us"]["mentions"] == 1  # "US", not "Us"
    junk = {"a", "thou", "2015", "film", "own hand", "hand", "other people", "people"}
    assert junk.isdisjoint(entities)
    assert all(len(name) >= 2 for name in entities)


def test_a_changed_document_re_reads_only_its_changed_chunks(spacy_extractor):
    before = chunks("Ebenezer Scrooge employs Bob Cratchit.", "Jacob Marley warns Scrooge.", "Fred laughs.")
    _payload, observations = spacy_extractor.extract_chunks(before)
    after = [*before[:2], ChunkRef("docs/carol.txt:2", "docs/carol.txt", 2, 1, None, "Fred visits Scrooge.")]
    payload, reused = spacy_extractor.extract_chunks(after, observations)
    assert payload["stats"]["chunksReused"] == 2  # only the third chunk went through spaCy
    assert payload == {**spacy_extractor.extract(after), "stats": payload["stats"]}  # same as from scratch
    assert len(reused) == 3 and set(reused) & set(observations) == set(list(observations)[:2])


# --- llm ------------------------------------------------------------------------------------------

GOOD_REPLY = """Here is the graph:
```json
{"entities": [{"name": "Ebenezer Scrooge", "type": "person", "description": "A miser."},
              {"name": "Bob Cratchit", "type": "PERSON", "description": "His clerk."},
              {"name": "London", "type": "PLACE", "description": ""}],
 "relations": [{"source": "Ebenezer Scrooge", "target": "Bob Cratchit", "relation": "Works For", "weight": 9},
               {"source": "Bob Cratchit", "target": "London", "relation": "lives in", "weight": "often"},
               {"source": "Bob Cratchit", "target": "Nobody", "relation": "knows", "weight": 2}],
 "claims": [{"subject": "Ebenezer Scrooge", "object": "Bob Cratchit",
             "description": "Ebenezer Scrooge employs Bob Cratchit.", "chunk": 1},
            {"subject": "Bob Cratchit", "object": null, "description": "Bob lives in London.", "chunk": "2"},
            {"subject": "Bob Cratchit", "description": "Bob is secretly rich.", "chunk": 2}]}
```"""


def test_llm_extraction_repairs_clamps_and_keeps_only_verbatim_claims(openai_server, spacy_extractor):
    openai_server.chat_script.append(TextReply(GOOD_REPLY))
    extractor = LLMExtractor(chat(openai_server), model_name="gpt-test", fallback=lambda: spacy_extractor)
    payload = extractor.extract(chunks("Ebenezer Scrooge employs Bob Cratchit.", "Bob lives in\nLondon."))
    assert [e["name"] for e in payload["entities"]] == ["bob cratchit", "ebenezer scrooge", "london"]
    assert payload["entities"][1]["type"] == "PERSON" and payload["entities"][1]["description"] == "A miser."
    relations = {(r["source"], r["target"]): r for r in payload["relations"]}
    assert relations[("bob cratchit", "ebenezer scrooge")]["relation"] == "works_for"
    assert relations[("bob cratchit", "ebenezer scrooge")]["weight"] == 5.0  # 9 clamped to 1-5
    assert relations[("bob cratchit", "london")]["weight"] == 1.0  # not a number: 1
    assert len(relations) == 2  # the relation to an unknown entity was dropped
    claims = [(c["subject"], c["object"], c["description"], c["chunk"]) for c in payload["claims"]]
    assert claims == [
        ("ebenezer scrooge", "bob cratchit", "Ebenezer Scrooge employs Bob Cratchit.", "docs/carol.txt:0"),
        ("bob cratchit", None, "Bob lives in London.", "docs/carol.txt:1"),  # whitespace-insensitive verbatim
    ]  # "Bob is secretly rich." is not in the text: dropped
    assert payload["stats"]["claims_dropped"] == 1 and payload["extractor"] == llm_cache_key("gpt-test")
    prompt = openai_server.chat_requests[0]["messages"][0]["content"]
    assert "[chunk 1]\nEbenezer Scrooge employs Bob Cratchit." in prompt and "[chunk 2]" in prompt


def test_llm_extraction_retries_once_then_falls_back_to_local(openai_server, spacy_extractor):
    openai_server.chat_script.extend([TextReply("I cannot do that."), TextReply("{broken json")])
    extractor = LLMExtractor(chat(openai_server), model_name="gpt-test", fallback=lambda: spacy_extractor)
    payload = extractor.extract(chunks("Ebenezer Scrooge employs Bob Cratchit in London."))
    assert len(openai_server.chat_requests) == 2  # one retry, then no more model calls
    assert payload["stats"]["fallbacks"] == 1
    assert {"ebenezer scrooge", "bob cratchit"} <= {e["name"] for e in payload["entities"]}


def test_llm_extraction_survives_a_provider_error(openai_server, spacy_extractor):
    openai_server.fail_next(1, status=500)
    extractor = LLMExtractor(chat(openai_server), model_name="gpt-test", fallback=lambda: spacy_extractor)
    payload = extractor.extract(chunks("Ebenezer Scrooge employs Bob Cratchit."))
    assert payload["stats"]["fallbacks"] == 1 and payload["entities"]


def test_a_build_with_the_llm_extractor_from_settings_never_fails_on_model_output(openai_server, settings):
    from librarian.stack import Stack

    stack = Stack(
        settings.model_copy(
            update={
                "graph_extractor": "llm",
                "graph_summarizer": "llm",
                "chat_model": "openai:gpt-test",
                "chat_base_url": openai_server.base_url,
                "openai_api_key": "sk-test",
            }
        )
    )
    import os

    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    assert (
        extractor_key(stack.settings)
        == get_extractor(stack.settings).cache_key
        == llm_cache_key("openai:gpt-test")
    )
    saver = InMemorySaver()
    docs = DocumentService(stack, saver)
    path = docs.upload("acme", "carol.txt", b"Ebenezer Scrooge employs Bob Cratchit in London.")
    assert docs.ingest("acme", path).status == "indexed"
    openai_server.default_reply = TextReply("not json at all")  # every extraction and summary reply is junk
    report = GraphIndexService(stack, saver).build("acme")
    assert report["lastBuild"]["status"] == "published" and report["entities"] >= 2
    assert report["extractor"] == llm_cache_key("openai:gpt-test")
    community = stack.graph_store.scope("acme").communities()[0]
    assert community.summary and community.summarizer.startswith("llm:")  # local fallback under the llm key
    assert len(openai_server.chat_requests) >= 4  # extraction and summaries went to the model, twice each


# --- llm summaries --------------------------------------------------------------------------------


def summary_context() -> CommunityContext:
    community = Community(1, 0, None, ["bob", "scrooge"])
    entities = {"scrooge": Entity("scrooge", "Scrooge", description="A miser."), "bob": Entity("bob", "Bob")}
    return CommunityContext(community, entities, [Edge("bob", "scrooge", "employ", 2.0)], [])


def test_llm_summary_reads_the_notes_json_and_sends_the_context(openai_server):
    reply = {"communityName": "Scrooge's counting-house", "summaryContent": "Scrooge employs Bob."}
    openai_server.chat_script.append(TextReply("```json\n" + json.dumps(reply) + "\n```"))
    summarizer = LLMSummarizer(chat(openai_server), model_name="gpt-test", budget=4000)
    assert summarizer.summarize(summary_context()) == ("Scrooge's counting-house", "Scrooge employs Bob.")
    prompt = openai_server.chat_requests[0]["messages"][0]["content"]
    assert "- Scrooge: A miser." in prompt and "- Bob -> Scrooge: employ (weight 2)" in prompt
    assert '"communityName"' in prompt and summarizer.cache_key == "llm:gpt-test:budget-4000:v2"


def test_llm_summary_falls_back_to_the_local_one_after_a_retry(openai_server):
    openai_server.chat_script.extend([TextReply('{"communityName": ""}'), TextReply("no")])
    summarizer = LLMSummarizer(chat(openai_server), model_name="gpt-test")
    assert summarizer.summarize(summary_context()) == LocalSummarizer().summarize(summary_context())
    assert summarizer.fallbacks == 1 and len(openai_server.chat_requests) == 2
