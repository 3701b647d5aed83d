"""How well the offline support scorer (`librarian/answers/support.py`) tells backed sentences from
unbacked ones.

Data: SciFact's sentence-level rationales (`../shared/data/scifact-dev/rationales/`). For every claim
with evidence, each sentence of each cited abstract is a pair: a rationale sentence backs the claim
(label 1), any other sentence of the same abstract does not (label 0). Same-abstract negatives are
on topic, so this measures support, not topicality.

Everything trained (the attention model of `librarian/answers/support_head.py`, its threshold) is
reported out of sample, twice: 5-fold cross-validation grouped by claim (no claim in both its training
and its test fold), and grouped by abstract (claims that cite a common abstract share a fold). The
second is the honest one: SciFact has claims that restate or negate each other over the same abstract,
so by-claim folds let a model meet the very test sentences in training. Inside each training fold, one
eighth of the claims is held out to pick the epoch and the threshold (the one keeping 80% of backed
pairs, `--recall`); test scores come from the shipped numpy forward and include the number rule.
Baselines in the same run: the MiniLM cosine alone, and a logistic regression over the same FEATURES
(the previous shipped form).

`--write` trains the shipped model on all pairs (epochs: the median the by-abstract folds chose;
threshold: the one keeping `--recall` of backed pairs among the by-abstract out-of-fold scores) and
writes `librarian/answers/assets/support_head.npz`.

Labels are SciFact's: a rationale backs the claim whether it SUPPORTs or CONTRADICTs it (a third of
the rationale sets contradict), so this measures whether a sentence is the evidence, not entailment.

    python bench/support_scorer.py [--data DIR] [--folds 5] [--limit N] [--cache FILE.pkl] [--write]
    python bench/support_scorer.py --floor ../shared/data/hotpotqa-dev150   # the extractive answer floor

Needs the `bench` and `train` extras (scikit-learn, torch). Inputs take 1-3 minutes on 2 cores (MiniLM
runs twice over ~4k distinct texts: sentence and token vectors); `--cache` keeps them for reruns.
Training takes about 3 minutes per fold.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from librarian.answers.support import FEATURES, PairInputs, SupportScorer
from librarian.answers.support_head import WEIGHTS_FILE

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
    """How the extractive answerer's floor (`librarian.answers.extractive.ANSWER_FLOOR`) splits
    answerable from unanswerable questions. Answerable: a HotpotQA question against the sentences of
    its own supporting paragraphs. Unanswerable: the same question against the supporting paragraphs
    of the next question (other Wikipedia articles, so the documents do not answer). Score: the best
    MiniLM cosine between the question and any sentence, as the answerer computes it. The floor is set
    by hand, not fitted."""
    from sklearn.metrics import roc_auc_score

    from librarian.answers.support import bundled_embedder
    from librarian.text.sentences import split_sentences

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


def logistic_out_of_fold(x: np.ndarray, y: np.ndarray, groups: np.ndarray, folds: int) -> np.ndarray:
    """Out-of-fold scores of a logistic regression over FEATURES: the previous shipped form."""
    from sklearn.model_selection import GroupKFold

    scores = np.zeros(len(y))
    for train, test in GroupKFold(n_splits=folds).split(x, y, groups):
        weights, intercept = fit(x[train], y[train])
        scores[test] = x[test] @ weights + intercept
    return scores


def head_cross_validation(
    trainer, inputs: PairInputs, y: np.ndarray, groups: np.ndarray, pairs: tuple[list[str], list[str]],
    args: argparse.Namespace, scorer: SupportScorer, title: str,
) -> tuple[np.ndarray, list[int]]:  # fmt: skip
    """k-fold figures of the attention model; returns its pooled out-of-fold scores (number rule
    applied) and the epoch each fold kept."""
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold
    from support_training import head_scores

    claims, sentences = pairs
    print(f"\n{args.folds}-fold {title} (model, epoch and threshold fitted on the other folds):")
    print("  fold  AUC    logistic AUC  cosine AUC  epoch  threshold  precision  recall")
    logistic = logistic_out_of_fold(inputs.features, y, groups, args.folds)
    aucs, precisions, recalls, epochs = [], [], [], []
    oof = np.zeros(len(y))
    splits = GroupKFold(n_splits=args.folds).split(inputs.features, y, groups)
    for fold, (train, test) in enumerate(splits, start=1):
        started = time.perf_counter()
        head, epoch = trainer.train_with_validation(train, groups, args.recall)
        model = SupportScorer(embedder=scorer.embedder, head=head)
        scores = model.apply_rules(
            [claims[i] for i in test], [sentences[i] for i in test], head_scores(head, inputs, test)
        )
        oof[test] = scores
        auc = roc_auc_score(y[test], scores)
        p, r = precision_recall(y[test], scores, model.threshold)
        aucs.append(auc)
        precisions.append(p)
        recalls.append(r)
        epochs.append(epoch)
        print(
            f"  {fold:4d}  {auc:.3f}  {roc_auc_score(y[test], logistic[test]):.3f}         "
            f"{roc_auc_score(y[test], inputs.features[test, 0]):.3f}       {epoch:4d}   {model.threshold:.3f}"
            f"      {p:.3f}      {r:.3f}   ({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
    baseline = roc_auc_score(y, inputs.features[:, 0])
    print(
        f"  mean  {np.mean(aucs):.3f} ± {np.std(aucs):.3f}; precision {np.mean(precisions):.3f}, "
        f"recall {np.mean(recalls):.3f}; pooled out-of-fold AUC {roc_auc_score(y, oof):.3f} "
        f"({roc_auc_score(y, oof) / baseline:.2f}x cosine {baseline:.3f}; logistic over FEATURES "
        f"{roc_auc_score(y, logistic):.3f})"
    )
    return oof, epochs


def load_inputs(args: argparse.Namespace, scorer: SupportScorer, claims: list[str], sentences: list[str]):
    """The scorer's own inputs for every pair (the product path), cached in a pickle when asked."""
    import pickle

    if args.cache is not None and args.cache.exists():
        with args.cache.open("rb") as f:
            inputs = pickle.load(f)
        print(f"inputs: reused {args.cache}")
    else:
        started = time.perf_counter()
        inputs = scorer.inputs(claims, sentences)
        elapsed = time.perf_counter() - started
        print(f"inputs: {elapsed:.1f} s ({len(claims) / elapsed:.0f} pairs/s)")
        if args.cache is not None:
            with args.cache.open("wb") as f:
                pickle.dump(inputs, f)
    assert inputs.features.shape == (len(claims), len(FEATURES)), "the cache holds other pairs or FEATURES"
    return inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None, help="first N claims with evidence")
    parser.add_argument(
        "--floor", type=Path, default=None, help="a QA folder: measure the answer floor instead"
    )
    parser.add_argument(
        "--cache", type=Path, default=None, help="inputs .pkl: reused if present, else written"
    )
    parser.add_argument(
        "--recall", type=float, default=0.8, help="recall of backed pairs the threshold targets"
    )
    parser.add_argument("--epochs", type=int, default=20, help="most epochs a fold may train")
    parser.add_argument("--dropout", type=float, default=None, help="default: TrainingConfig's")
    parser.add_argument("--weight-decay", type=float, default=None, help="default: TrainingConfig's")
    parser.add_argument("--by-abstract-only", action="store_true", help="skip the by-claim folds")
    parser.add_argument("--write", action="store_true", help=f"train on all pairs and write {WEIGHTS_FILE}")
    args = parser.parse_args()
    if args.floor is not None:
        from librarian.answers.extractive import ANSWER_FLOOR

        answer_floor(args.floor, ANSWER_FLOOR)
        return
    from sklearn.metrics import roc_auc_score
    from support_training import Trainer, TrainingConfig, head_scores, recall_threshold

    claims, sentences, y, groups, clusters = load_pairs(args.data, args.limit)
    print(
        f"pairs: {len(y)} ({int(y.sum())} backed) from {len(set(groups))} claims "
        f"({len(set(clusters))} clusters of claims sharing an abstract)"
    )
    scorer = SupportScorer()
    inputs = load_inputs(args, scorer, claims, sentences)
    x = inputs.features

    baseline = roc_auc_score(y, x[:, 0])
    print("\nsingle signals, ROC-AUC (no fitting):")
    for i, name in enumerate(FEATURES):
        print(
            f"  {name:32s} {roc_auc_score(y, x[:, i]):.3f}"
            f"  ({roc_auc_score(y, x[:, i]) / baseline:.2f}x cosine)"
        )

    if WEIGHTS_FILE.exists() and not args.write:
        shipped = scorer.apply_rules(claims, sentences, head_scores(scorer.head, inputs, np.arange(len(y))))
        print(
            f"\nshipped model ({WEIGHTS_FILE.name}) on all pairs (in sample when it was trained on them): "
            f"AUC {roc_auc_score(y, shipped):.3f}, "
            "P/R at its threshold {:.3f}: {:.3f}/{:.3f}".format(
                scorer.threshold, *precision_recall(y, shipped, scorer.threshold)
            )
        )

    overrides = {"dropout": args.dropout, "weight_decay": args.weight_decay}
    config = TrainingConfig(epochs=args.epochs, **{k: v for k, v in overrides.items() if v is not None})
    trainer = Trainer(inputs, y, config)
    pairs = (claims, sentences)
    if not args.by_abstract_only:
        head_cross_validation(trainer, inputs, y, groups, pairs, args, scorer, "by claim")
    oof, epochs = head_cross_validation(trainer, inputs, y, clusters, pairs, args, scorer, "by abstract")

    if args.write:
        epochs_used = int(np.median(epochs))
        threshold = recall_threshold(y, oof, args.recall)
        started = time.perf_counter()
        head, _ = trainer.train(np.arange(len(y)), None, epochs_used, args.recall)
        head = type(head)(**{**head.__dict__, "threshold": threshold})
        WEIGHTS_FILE.parent.mkdir(parents=True, exist_ok=True)
        head.save(WEIGHTS_FILE)
        scores = head_scores(head, inputs, np.arange(len(y)))
        print(
            f"\nwrote {WEIGHTS_FILE} ({time.perf_counter() - started:.0f} s): "
            f"{epochs_used} epochs on all pairs, "
            f"threshold {threshold:.3f} (keeps {args.recall:.0%} of backed pairs out of fold); "
            f"in-sample AUC {roc_auc_score(y, scores):.3f}"
        )


if __name__ == "__main__":
    main()
