"""How well the offline support scorer (`tools/support.py`) tells backed sentences from unbacked ones.

Data: SciFact's sentence-level rationales (`../shared/data/scifact-dev/rationales/`). For every claim
with evidence, each sentence of each cited abstract is a pair: a rationale sentence backs the claim
(label 1), any other sentence of the same abstract does not (label 0). Same-abstract negatives are
on topic, so this measures support, not topicality.

Everything fitted (the logistic weights, the threshold) is reported out of sample, twice:
5-fold cross-validation grouped by claim (no claim in both its training and its test fold), and
grouped by abstract (claims that cite a common abstract share a fold). The second is the honest one:
SciFact has claims that restate or negate each other over the same abstract, so by-claim folds let
a model meet the very test sentences in training; a logistic regression barely gains from that, a
tree model does (`--trees` prints both). The threshold is picked in each training fold (the one
keeping 80% recall of backed pairs, `--recall`); test scores include the scorer's number rule.
In-sample figures (fit and evaluate on all pairs) are printed for comparison, with the weights to
paste into `tools/support.py`. Baseline: the MiniLM cosine alone, scored in the same run; figures
are also printed as ratios to it.

Labels are SciFact's: a rationale backs the claim whether it SUPPORTs or CONTRADICTs it (a third of
the rationale sets contradict), so this measures whether a sentence is the evidence, not entailment.

    python bench/support_scorer.py [--data DIR] [--folds 5] [--limit N] [--cache FILE.npy] [--recall 0.8]
    python bench/support_scorer.py --trees --cache /tmp/support.npy   # gradient-boosted trees, compared
    python bench/support_scorer.py --floor ../shared/data/hotpotqa-dev150   # the extractive answer floor

Needs the `bench` extra (scikit-learn). Features take 1-7 minutes on 2 cores depending on load (MiniLM
runs twice over ~4k distinct texts: sentence and token vectors); `--cache` keeps them for reruns.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.support import FEATURES, INTERCEPT, THRESHOLD, WEIGHTS, SupportScorer

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact-dev" / "rationales"


def load_pairs(
    folder: Path, limit: int | None
) -> tuple[list[str], list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(claims, sentences, labels, claim ids, abstract clusters) for every sentence of every cited
    abstract with evidence. Claims citing a common abstract share a cluster (connected components)."""
    abstracts = {}
    for line in (folder / "corpus.jsonl").open():
        doc = json.loads(line)
        abstracts[str(doc["doc_id"])] = doc["abstract"]
    claims, sentences, labels, groups = [], [], [], []
    links: list[tuple[int, str]] = []
    for line in (folder / "claims_train.jsonl").open():
        claim = json.loads(line)
        if not claim["evidence"]:
            continue
        if limit is not None and len(set(groups)) >= limit:
            break
        for doc_id, rationales in claim["evidence"].items():
            backed = {i for r in rationales for i in r["sentences"]}
            for i, sentence in enumerate(abstracts[doc_id]):
                claims.append(claim["claim"])
                sentences.append(sentence)
                labels.append(int(i in backed))
                groups.append(claim["id"])
                links.append((claim["id"], doc_id))
    parent: dict[str, str] = {}

    def root(node: str) -> str:
        while parent.setdefault(node, node) != node:
            node = parent[node]
        return node

    for claim_id, doc_id in links:
        parent[root(f"claim {claim_id}")] = root(f"doc {doc_id}")
    roots: dict[str, int] = {}
    clusters = [roots.setdefault(root(f"claim {g}"), len(roots)) for g in groups]
    return claims, sentences, np.asarray(labels), np.asarray(groups), np.asarray(clusters)


def recall_threshold(labels: np.ndarray, scores: np.ndarray, recall: float) -> float:
    """The highest threshold that keeps `recall` of the backed pairs: a backed sentence is flagged as
    unsupported at most 1 - recall of the time (flags are visible to users; false ones cost trust)."""
    backed = np.sort(scores[labels == 1])
    return float(backed[int(np.floor((1.0 - recall) * len(backed)))])


def precision_recall(labels: np.ndarray, scores: np.ndarray, threshold: float) -> tuple[float, float]:
    predicted = scores >= threshold
    tp = int((predicted & (labels == 1)).sum())
    return tp / max(1, int(predicted.sum())), tp / max(1, int((labels == 1).sum()))


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Logistic regression on standardised features; returns raw-feature weights and intercept."""
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    model = LogisticRegression(C=1.0, max_iter=1000).fit((x - mean) / scale, y)
    weights = model.coef_[0] / scale
    return weights, float(model.intercept_[0] - (weights * mean).sum())


def answer_floor(folder: Path, floor: float) -> None:
    """How the extractive answerer's floor (`graphs.extractive.ANSWER_FLOOR`) splits answerable from
    unanswerable questions. Answerable: a HotpotQA question against the sentences of its own supporting
    paragraphs. Unanswerable: the same question against the supporting paragraphs of the next question
    (other Wikipedia articles, so the documents do not answer). Score: the best MiniLM cosine between
    the question and any sentence, as the answerer computes it. The floor is set by hand, not fitted."""
    from sklearn.metrics import roc_auc_score

    from tools.citations import split_sentences
    from tools.support import bundled_embedder

    paragraphs = {}
    for line in (folder / "corpus.jsonl").open():
        doc = json.loads(line)
        paragraphs[doc["_id"]] = doc["text"]
    questions = [json.loads(line) for line in (folder / "qa.jsonl").open()]
    sentences = {
        doc_id: [paragraphs[doc_id][s:e] for s, e in split_sentences(paragraphs[doc_id])]
        for q in questions
        for doc_id in q["supporting_doc_ids"]
    }
    texts = list(
        dict.fromkeys([*(q["question"] for q in questions), *(t for v in sentences.values() for t in v)])
    )
    vectors = dict(zip(texts, bundled_embedder().embed_array(texts), strict=True))

    def best(question: str, doc_ids: list[str]) -> float:
        return max(float(vectors[question] @ vectors[t]) for d in doc_ids for t in sentences[d])

    answerable = np.array([best(q["question"], q["supporting_doc_ids"]) for q in questions])
    shifted = questions[1:] + questions[:1]
    unanswerable = np.array(
        [best(q["question"], o["supporting_doc_ids"]) for q, o in zip(questions, shifted, strict=True)]
    )
    labels = np.r_[np.ones(len(answerable)), np.zeros(len(unanswerable))]
    print(f"answer floor on {folder.name} ({len(questions)} questions, each answerable and unanswerable):")
    print(f"  best-sentence cosine AUC {roc_auc_score(labels, np.r_[answerable, unanswerable]):.3f}")
    kept, refused = np.mean(answerable >= floor), np.mean(unanswerable < floor)
    print(f"  at floor {floor}: answers {kept:.1%} of answerable questions, abstains on "
          f"{refused:.1%} of unanswerable ones")  # fmt: skip


def cross_validate(
    x: np.ndarray, y: np.ndarray, groups: np.ndarray, pairs: tuple[list[str], list[str]],
    args: argparse.Namespace, scorer: SupportScorer, title: str,
) -> None:  # fmt: skip
    """k-fold figures for the shipped model form: weights and threshold fitted on the other folds, the
    number rule applied to the test fold's scores."""
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold

    claims, sentences = pairs
    print(f"\n{args.folds}-fold {title} (weights and threshold fitted on the other folds):")
    print("  fold  AUC    cosine AUC  threshold  precision  recall")
    aucs, precisions, recalls = [], [], []
    oof = np.zeros(len(y))
    for fold, (train, test) in enumerate(GroupKFold(n_splits=args.folds).split(x, y, groups), start=1):
        weights, intercept = fit(x[train], y[train])
        model = SupportScorer(embedder=scorer.embedder, weights=weights, intercept=intercept)
        model.threshold = recall_threshold(y[train], model.probability(x[train]), args.recall)
        scores = model.apply_rules(
            [claims[i] for i in test], [sentences[i] for i in test], model.probability(x[test])
        )
        oof[test] = scores
        auc = roc_auc_score(y[test], scores)
        p, r = precision_recall(y[test], scores, model.threshold)
        aucs.append(auc)
        precisions.append(p)
        recalls.append(r)
        print(
            f"  {fold:4d}  {auc:.3f}  {roc_auc_score(y[test], x[test, 0]):.3f}"
            f"       {model.threshold:.3f}      {p:.3f}      {r:.3f}"
        )
    baseline = roc_auc_score(y, x[:, 0])
    print(
        f"  mean  {np.mean(aucs):.3f} ± {np.std(aucs):.3f}; precision {np.mean(precisions):.3f}, "
        f"recall {np.mean(recalls):.3f}; pooled out-of-fold AUC {roc_auc_score(y, oof):.3f} "
        f"({roc_auc_score(y, oof) / baseline:.2f}x cosine {baseline:.3f})"
    )


def compare_trees(
    x: np.ndarray, y: np.ndarray, by_claim: np.ndarray, by_abstract: np.ndarray, folds: int
) -> None:
    """Gradient-boosted trees on the same features, next to the logistic regression, under both
    groupings: why the shipped model stays linear (its gain by claim comes from shared abstracts)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold

    def trees() -> HistGradientBoostingClassifier:
        return HistGradientBoostingClassifier(
            max_iter=200, learning_rate=0.05, max_leaf_nodes=15, min_samples_leaf=40, l2_regularization=1.0
        )

    print("\nlogistic regression vs gradient-boosted trees (no rule), pooled out-of-fold AUC:")
    for title, groups in (("by claim", by_claim), ("by abstract", by_abstract)):
        linear, boosted = np.zeros(len(y)), np.zeros(len(y))
        for train, test in GroupKFold(n_splits=folds).split(x, y, groups):
            weights, intercept = fit(x[train], y[train])
            linear[test] = x[test] @ weights + intercept
            boosted[test] = trees().fit(x[train], y[train]).predict_proba(x[test])[:, 1]
        print(
            f"  {title:12s} logistic {roc_auc_score(y, linear):.3f}   trees {roc_auc_score(y, boosted):.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None, help="first N claims with evidence")
    parser.add_argument(
        "--floor", type=Path, default=None, help="a QA folder: measure the answer floor instead"
    )
    parser.add_argument(
        "--cache", type=Path, default=None, help="features .npy: reused if present, else written"
    )
    parser.add_argument(
        "--recall", type=float, default=0.8, help="recall of backed pairs the threshold targets"
    )
    parser.add_argument("--trees", action="store_true", help="also compare gradient-boosted trees")
    args = parser.parse_args()
    if args.floor is not None:
        from graphs.extractive import ANSWER_FLOOR

        answer_floor(args.floor, ANSWER_FLOOR)
        return
    from sklearn.metrics import roc_auc_score

    claims, sentences, y, groups, clusters = load_pairs(args.data, args.limit)
    print(
        f"pairs: {len(y)} ({int(y.sum())} backed) from {len(set(groups))} claims "
        f"({len(set(clusters))} clusters of claims sharing an abstract)"
    )
    scorer = SupportScorer()
    started = time.perf_counter()
    if args.cache is not None and args.cache.exists():
        x = np.load(args.cache)
        print(f"features: reused {args.cache}")
    else:
        x = scorer.features(claims, sentences)
        elapsed = time.perf_counter() - started
        print(f"features: {elapsed:.1f} s ({len(y) / elapsed:.0f} pairs/s)")
        if args.cache is not None:
            np.save(args.cache, x)
    assert x.shape == (len(y), len(FEATURES)), "the cache holds features of other pairs or another version"

    baseline = roc_auc_score(y, x[:, 0])
    print("\nsingle signals, ROC-AUC (no fitting):")
    for i, name in enumerate(FEATURES):
        print(
            f"  {name:24s} {roc_auc_score(y, x[:, i]):.3f}"
            f"  ({roc_auc_score(y, x[:, i]) / baseline:.2f}x cosine)"
        )

    raw = scorer.probability(x)
    shipped = scorer.apply_rules(claims, sentences, raw)
    capped = shipped < raw
    print(
        f"\nshipped weights (tools/support.py), all pairs: AUC {roc_auc_score(y, shipped):.3f} "
        f"({roc_auc_score(y, raw):.3f} without the number rule), "
        "P/R at THRESHOLD {:.3f}: {:.3f}/{:.3f}".format(THRESHOLD, *precision_recall(y, shipped, THRESHOLD))
    )
    print(
        f"number rule: {int(capped.sum())} pairs capped below the threshold, "
        f"{int((capped & (y == 1)).sum())} of them backed"
    )

    cross_validate(x, y, groups, (claims, sentences), args, scorer, "by claim")
    cross_validate(x, y, clusters, (claims, sentences), args, scorer, "by abstract")
    if args.trees:
        compare_trees(x, y, groups, clusters, args.folds)

    weights, intercept = fit(x, y)
    model = SupportScorer(embedder=scorer.embedder, weights=weights, intercept=intercept)
    model.threshold = recall_threshold(y, model.probability(x), args.recall)
    scores = model.apply_rules(claims, sentences, model.probability(x))
    p, r = precision_recall(y, scores, model.threshold)
    print(
        f"\nin-sample (fit on all pairs): AUC {roc_auc_score(y, scores):.3f}, "
        f"threshold {model.threshold:.3f}, P {p:.3f}, R {r:.3f}"
    )
    print("paste into tools/support.py:")
    print(f"WEIGHTS = ({', '.join(f'{w:.4f}' for w in weights)})")
    print(f"INTERCEPT = {intercept:.4f}")
    print(f"THRESHOLD = {model.threshold:.3f}")
    unchanged = np.allclose(WEIGHTS, np.round(weights, 4), atol=1e-3) and abs(INTERCEPT - intercept) < 1e-3
    print(f"(shipped weights {'match' if unchanged else 'differ from'} this fit)")


if __name__ == "__main__":
    main()
