"""Chinese and Korean documents are found by questions in their language, on the embedded defaults.

Two of the source documents (seeds 001, Chinese, and 003, Korean, mixed with English terms) are
ingested next to two English ones. MiniLM is an English model (its vectors of CJK text mostly reflect
the script, not the meaning), so the lexical channel must carry these questions: CJK text is indexed as
character bigrams (`text_terms.cjk_bigrams`), which match whatever the word boundaries.
"""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from librarian.retrieval.search import SearchOptions, search
from librarian.stack import Stack
from services.documents import DocumentService
from tests.conftest import SHARED_DIR
from tests.integration.tenant_corpus import clean_settings

SEEDS = SHARED_DIR / "seeds"
ORG = "polyglot"
QUESTIONS = {
    "为什么租户边界是 RAG 系统中最难的部分？": "001_",  # why is the tenant boundary the hard part
    "多租户系统里谁能选择搜索哪个索引？": "001_",  # who may choose which index is searched
    "벡터 저장소에 대한 의미 검색 도구는 어떤 기능을 지원합니까?": "003_",  # what the query tool supports
    "필터링과 순위 재지정을 지원하는 도구": "003_",  # the tool that supports filtering and reranking
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Stack:
    seeds = sorted(SEEDS.glob("00[0-3]_*.txt"))
    if len(seeds) < 4:
        pytest.skip(f"seed documents not found at {SEEDS} (set LIBRARIAN_SHARED_DIR)")
    with pytest.MonkeyPatch.context() as mp:
        stack = Stack(clean_settings(tmp_path_factory.mktemp("multilingual") / "data", mp))
    service = DocumentService(stack, InMemorySaver())
    for seed in seeds:
        assert service.ingest(ORG, service.upload(ORG, seed.name, seed.read_bytes())).status == "indexed"
    return stack


@pytest.mark.parametrize("sparse_idf", ["namespace", "fixed"])
@pytest.mark.parametrize("question", list(QUESTIONS))
def test_a_cjk_question_finds_its_document(corpus: Stack, question: str, sparse_idf: str):
    stack = Stack(corpus.settings.model_copy(update={"sparse_idf": sparse_idf}))
    sources = search(stack, ORG, question, SearchOptions.from_settings(stack, top_k=3))["sources"]
    assert [s["filename"][:4] for s in sources] == [QUESTIONS[question]] * 3
    assert sources[0]["scores"]["sparse"] > 0  # found through the bigrams, not by chance
