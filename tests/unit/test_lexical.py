"""The fixed lexical sparse encoder: stable ids, codes intact, no stop words, sane scores, thread safety."""

from __future__ import annotations

import math
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from librarian.embeddings.base import SparseVector
from librarian.embeddings.lexical import (
    MODEL_ID,
    LexicalRecipe,
    LexicalSparseEmbedder,
    term_id,
)
from librarian.embeddings.text_terms import STOPWORDS, terms


@pytest.fixture(scope="module")
def embedder() -> LexicalSparseEmbedder:
    return LexicalSparseEmbedder()


def dot(a: SparseVector, b: SparseVector) -> float:
    weights = dict(zip(a["indices"], a["values"], strict=True))
    return sum(weights.get(i, 0.0) * v for i, v in zip(b["indices"], b["values"], strict=True))


def as_dict(v: SparseVector) -> dict[int, float]:
    return dict(zip(v["indices"], v["values"], strict=True))


def test_term_ids_are_fixed_forever() -> None:
    # MurmurHash3 x86_32, seed 0, unsigned: if these change, every stored sparse vector is wrong.
    assert term_id("password") == 2092961062
    assert term_id("e1234") == 3214761970
    assert term_id("studi") == 4144206424


def test_model_id_names_a_versioned_recipe() -> None:
    assert LexicalSparseEmbedder().model_id == MODEL_ID == "librarian-lexical-bm25-wordfreq-v2"
    tuned = LexicalSparseEmbedder(LexicalRecipe(k1=2.0))
    assert tuned.model_id != MODEL_ID and tuned.model_id.startswith(MODEL_ID)


def test_known_document_vector_is_stable(embedder: LexicalSparseEmbedder) -> None:
    # Pins the whole recipe (tokens, stems, idf, saturation, scale) on one text: any drift fails here first.
    # "Resetting" and "reset" share a stem (tf 2), as do "passwords" and "password"; "the" is dropped.
    v = as_dict(embedder.embed_documents(["Resetting passwords: reset the password twice."])[0])
    assert v == {
        term_id("reset"): pytest.approx(1.0322, abs=1e-4),
        term_id("password"): pytest.approx(0.9203, abs=1e-4),
        term_id("twice"): pytest.approx(0.5793, abs=1e-4),
    }
    query = embedder.embed_query("reset password")
    assert as_dict(query) == {
        term_id("reset"): pytest.approx(2**-0.5),
        term_id("password"): pytest.approx(2**-0.5),
    }


def test_vectors_are_identical_across_processes(embedder: LexicalSparseEmbedder) -> None:
    text = "Error E1234 on x86_64: the build failed while linking libssl."
    code = (
        "from librarian.embeddings.lexical import LexicalSparseEmbedder as L;"
        f"print(L().embed_documents([{text!r}])[0])"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert other.strip() == str(embedder.embed_documents([text])[0])


def test_codes_survive_whole(embedder: LexicalSparseEmbedder) -> None:
    tokens = terms("Error E1234 on x86_64 (see IL-6 and v2.3.1)")
    for code in ("e1234", "x86_64", "il-6", "v2.3.1"):
        assert code in tokens
    query = embedder.embed_query("E1234")
    assert query["indices"] == [term_id("e1234")]
    docs = embedder.embed_documents(["fault E1234 in the pump", "fault E1235 in the pump"])
    assert dot(query, docs[0]) > 0.0
    assert dot(query, docs[1]) == 0.0


def test_unseen_codes_weigh_more_than_common_words(embedder: LexicalSparseEmbedder) -> None:
    v = as_dict(embedder.embed_documents(["system error ZX81Q"])[0])
    assert v[term_id("zx81q")] > 2 * v[term_id("error")]
    assert v[term_id("error")] > 0.0


def test_stopwords_vanish(embedder: LexicalSparseEmbedder) -> None:
    assert {"the", "and", "of", "is"} <= STOPWORDS
    assert embedder.embed_query("the and of is to was") == {"indices": [], "values": []}
    assert terms("The cat is on the mat") == ["cat", "mat"]


def test_stemming_matches_inflections(embedder: LexicalSparseEmbedder) -> None:
    query = embedder.embed_query("studies of connection")
    doc = embedder.embed_documents(["We studied how devices connect."])[0]
    assert set(query["indices"]) == set(doc["indices"]) & set(query["indices"])
    assert dot(query, doc) > 0.0


def test_overlap_scores_above_no_overlap(embedder: LexicalSparseEmbedder) -> None:
    query = embedder.embed_query("How do I reset my password?")
    docs = embedder.embed_documents(
        [
            "To reset your password, open Settings and choose Reset password.",
            "Quarterly revenue grew by twelve percent in Europe.",
            "Password rules: at least twelve characters.",
        ]
    )
    scores = [dot(query, d) for d in docs]
    assert scores[0] > scores[2] > scores[1] == 0.0
    # Same order of magnitude as a cosine, so that alpha in alpha·dense + (1 - alpha)·sparse means something.
    assert 0.3 < scores[0] < 3.0


def test_values_positive_ids_unique_sorted_and_32_bit(embedder: LexicalSparseEmbedder) -> None:
    text = "Repeat repeat REPEAT repeated words; naïve café, 3.5% of 1,000 E1234 e1234 x86_64."
    for v in [*embedder.embed_documents([text]), embedder.embed_query(text)]:
        assert v["indices"] == sorted(set(v["indices"]))
        assert all(0 <= i < 2**32 for i in v["indices"])
        assert all(x > 0.0 and math.isfinite(x) for x in v["values"])
        assert len(v["indices"]) == len(v["values"])


def test_term_frequency_saturates(embedder: LexicalSparseEmbedder) -> None:
    one, three, nine = (
        as_dict(embedder.embed_documents([" ".join(["kinase"] * n + ["filler"] * (9 - n))])[0])[
            term_id("kinas")
        ]
        for n in (1, 3, 9)
    )
    assert one < three < nine
    assert nine - three < three - one


def test_empty_text_gives_empty_vector(embedder: LexicalSparseEmbedder) -> None:
    empty: SparseVector = {"indices": [], "values": []}
    assert embedder.embed_query("") == empty
    assert embedder.embed_query("  ...  ,;") == empty
    assert embedder.embed_documents(["", "   "]) == [empty, empty]
    assert embedder.embed_documents([]) == []


def test_deterministic_and_parallel_calls_equal_serial(embedder: LexicalSparseEmbedder) -> None:
    texts = [f"Document {i} about kinase inhibitors, E{1000 + i} and x86_64 builds." for i in range(40)]
    serial = embedder.embed_documents(texts)
    fresh = LexicalSparseEmbedder()
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(lambda t: fresh.embed_documents([t])[0], texts))
    assert parallel == serial
    assert embedder.embed_documents(texts) == serial


def test_cjk_text_is_indexed_as_character_bigrams(embedder: LexicalSparseEmbedder) -> None:
    assert terms("退款政策") == ["退款", "款政", "政策"]
    assert terms("환불은 14일") == ["환불", "불은", "14", "일"]
    assert terms("一条deterministic ingest") == ["一条", "determinist", "ingest"]
    doc = embedder.embed_documents(["本公司的退款政策：十四天内退款。"])[0]
    assert dot(embedder.embed_query("退款需要多久？"), doc) > 0
    assert dot(embedder.embed_query("停车场在哪里？"), doc) == 0


def test_namespace_idf_weights_rare_terms_of_the_namespace_up(embedder: LexicalSparseEmbedder) -> None:
    """With counts from the namespace, a term in every document counts less than one in few."""
    common, rare = term_id("refund"), term_id("garag")
    counts = {common: 1000, rare: 2}

    def term_counts(ids: list[int]) -> tuple[int, dict[int, int]]:
        assert set(ids) == {common, rare}  # asked about the query's terms only
        return 1000, {i: counts[i] for i in ids}

    fixed = as_dict(embedder.embed_query("refund garage"))
    local = as_dict(embedder.embed_query_with_counts("refund garage", term_counts))
    assert fixed[common] == fixed[rare]
    assert local[rare] > fixed[rare] and local[common] < fixed[common]
    assert local[rare] / local[common] > 5
    assert embedder.embed_query_with_counts("the of and", term_counts) == {"indices": [], "values": []}
