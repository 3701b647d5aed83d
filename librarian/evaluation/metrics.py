"""Ranking and answer metrics, and k-fold splits by query. Pure functions over ids and strings.

Ranking metrics follow BEIR/TREC conventions: graded gains with a log2 discount for nDCG, a relevant
document is one with a positive grade, and a query without relevant documents scores 0 (it is kept
in the mean, as pytrec_eval does). Answer metrics follow SQuAD: lower case, no punctuation, no
articles, no extra spaces; the best score over the gold answers counts.
"""

from __future__ import annotations

import math
import random
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence


def ndcg_at(ranked: Sequence[str], relevance: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevance.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in relevance.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def mrr_at(ranked: Sequence[str], relevance: dict[str, int], k: int = 10) -> float:
    return next((1.0 / (i + 1) for i, d in enumerate(ranked[:k]) if relevance.get(d, 0) > 0), 0.0)


def recall_at(ranked: Sequence[str], relevance: dict[str, int], k: int = 100) -> float:
    relevant = {d for d, g in relevance.items() if g > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def mean_recall_at(
    rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], k: int
) -> float:
    """Mean over the ranked queries of |relevant in top k| / |relevant| (relevant: grade > 0).

    The multi-hop protocol of HippoRAG and HippoRAG 2 (recall@2 and @5 over the supporting passages
    of each question, on one corpus pooled from all questions), so our figures compare with theirs.
    A query without relevant documents counts 0, as in `recall_at`.
    """
    if k < 1:
        raise ValueError(f"recall@k needs k >= 1, got {k}")
    return mean(recall_at(ranked, dict(qrels.get(qid, {})), k) for qid, ranked in rankings.items())


def mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, punctuation and articles removed, whitespace collapsed."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    norm = normalize_answer(prediction)
    return float(any(norm == normalize_answer(a) for a in answers))


def token_f1(prediction: str, answers: Sequence[str]) -> float:
    """Best token-overlap F1 against any gold answer."""
    predicted = normalize_answer(prediction).split()
    best = 0.0
    for answer in answers:
        gold = normalize_answer(answer).split()
        common = sum((Counter(predicted) & Counter(gold)).values())
        if not predicted or not gold or not common:
            best = max(best, float(predicted == gold))
            continue
        precision, recall = common / len(predicted), common / len(gold)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


def answer_contained(prediction: str, answers: Sequence[str]) -> float:
    """Whether a gold answer appears in the prediction (fairer than EM for quoting, extractive answers)."""
    norm = f" {normalize_answer(prediction)} "
    return float(any(f" {normalize_answer(a)} " in norm for a in answers if normalize_answer(a)))


def kfold(ids: Sequence[str], k: int = 5, seed: int = 0) -> list[tuple[list[str], list[str]]]:
    """(train, test) id lists for k folds; every id is tested exactly once. Shuffled with `seed`."""
    if k < 2 or k > len(ids):
        raise ValueError(f"k-fold needs 2 <= k <= {len(ids)} (the number of queries), got {k}")
    order = list(ids)
    random.Random(seed).shuffle(order)
    folds = [order[i::k] for i in range(k)]
    return [([x for j, f in enumerate(folds) if j != i for x in f], folds[i]) for i in range(k)]
