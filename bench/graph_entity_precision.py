"""Precision of the offline graph extractor's entities on real documents, in sample and k-fold by document.

    python bench/graph_entity_precision.py [--labels evals/graph_entities/labelled.jsonl] [--folds 3]

Reads the hand-labelled mentions of `evals/graph_entities/labelled.jsonl` (guideline: `GUIDELINE.md`
next to it) and runs the extractor on the labelled chunks (`chunks.jsonl`, the text ingest indexes; spaCy
parses each chunk once). A labelled mention counts as *extracted* when the extractor names its key
(its surface form, lower case, a leading "the" ignored: `match_key`) in that chunk. Printed per rule setting:

- precision = keep / (keep + drop) over the extracted labelled mentions;
- recall proxy = extracted / all of {labelled *keep* mentions, *expected* names} (names a reader expects;
  an expected name counts when it is named in any labelled chunk of its document);
- unlabelled = extracted mentions of the labelled chunks that no label covers (new names the rules now
  find, such as paths, or names the sample did not draw).

The baseline (same process) is the rules before issue 27 (`RuleConfig(modifiers="keep",
lone_lowercase=False, patterns=False)`, which is what rules version 3 did apart from the debris
trimming); ratios are printed against it. Then k-fold cross-validation by document (FHS PDF and HTML are
one group: same text): for each fold, the setting with the best F0.5 (precision weighted) on the other
folds is chosen and scored on the held-out fold. The shipped setting (`DEFAULT_RULES`) is scored in
sample, and per fold, separately. Last, the shipped rules are scored on `labelled_after_tuning.jsonl`:
120 mentions they produced that no label covered (paths, commands and names the old rules did not
find), drawn with a fixed seed and labelled after the rules were written (rules version 4).

Round 2 (rules version 5) tuned on both files above, so both are in-sample now. Its out-of-sample figure
is `labelled_round2.jsonl`: 120 mentions the version-5 rules produce over every document, drawn with a
new seed (`python -m evals.graph_entities.sample_round2`), names labelled in earlier rounds left out,
labelled before any precision was computed on it; its chunks are `chunks_round2.jsonl`. Round 3 (rules
version 6) tuned on that too; its out-of-sample figure is `labelled_round3.jsonl` (121 mentions, `--round
3`). Only the last round's figure is out of sample for the shipped rules; each is printed pooled and per
document group. (Version 5 measured 71.7 % (86/120) on round 2 before round 3 was tuned.)
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from librarian.graph.extract.entity_rules import DEFAULT_RULES, RuleConfig  # noqa: E402
from librarian.graph.extract.local import LocalExtractor, load_model  # noqa: E402

LABELS = REPO / "evals" / "graph_entities" / "labelled.jsonl"
ROUNDS = (2, 3)  # labelled_round<N>.jsonl / chunks_round<N>.jsonl; chunk ids get the prefix "round<N>|"
BASELINE = RuleConfig(modifiers="keep", lone_lowercase=False, patterns=False, common_phrases=True)
GRID = [
    RuleConfig(modifiers=m, lone_lowercase=low, patterns=pat, max_phrase_tokens=n, common_phrases=common)
    for m, low, pat, n, common in itertools.product(
        ("keep", "stoplist", "all"), (False, True), (False, True), (3, 5), (False, True)
    )
]


def match_key(name: str) -> str:
    """What a label and a mention are matched on: the surface form (lower case, single spaces), without
    a leading "the ". Not the key: "| Ash" (table debris) and "Ash" share the key "ash", but the label
    judged the surface the extractor produced."""
    value = " ".join(name.split()).lower()
    return value[4:] if value.startswith("the ") else value


def group_of(document: str) -> str:
    """Cross-validation group: a document, except that the FHS PDF and HTML (the same text) are one."""
    return "fhs" if "fhs-3.0" in document else document


def folds_of(documents: Iterable[str], k: int) -> list[set[str]]:
    """k groups of documents of about equal label counts (greedy by size; deterministic)."""
    sizes: dict[str, int] = {}
    for document in documents:
        sizes[group_of(document)] = sizes.get(group_of(document), 0) + 1
    folds: list[set[str]] = [set() for _ in range(k)]
    load = [0] * k
    for group, size in sorted(sizes.items(), key=lambda item: (-item[1], item[0])):
        target = load.index(min(load))
        folds[target].add(group)
        load[target] += size
    return folds


@dataclass
class Score:
    keep: int = 0
    drop: int = 0
    found: int = 0  # keep mentions + expected names extracted
    wanted: int = 0  # keep mentions + expected names
    unlabelled: int = 0

    @property
    def precision(self) -> float:
        return self.keep / (self.keep + self.drop) if self.keep + self.drop else 0.0

    @property
    def recall(self) -> float:
        return self.found / self.wanted if self.wanted else 0.0

    def f(self, beta: float = 0.5) -> float:
        p, r = self.precision, self.recall
        return (1 + beta**2) * p * r / (beta**2 * p + r) if p + r else 0.0

    def __str__(self) -> str:
        return (
            f"precision {self.precision:6.1%} ({self.keep}/{self.keep + self.drop})  "
            f"recall proxy {self.recall:6.1%} ({self.found}/{self.wanted})  unlabelled {self.unlabelled}"
        )


def extracted_keys(extractor: LocalExtractor, docs: dict[str, Any]) -> dict[str, set[str]]:
    """Chunk id → match keys of what the extractor names in it."""
    out: dict[str, set[str]] = {}
    for chunk_id, doc in docs.items():
        seen = extractor._observe(doc)
        out[chunk_id] = {match_key(row[1]) for row in seen["mentions"]}
    return out


def score(rows: list[dict], extracted: dict[str, set[str]], groups: set[str] | None = None) -> Score:
    result = Score()
    labelled: dict[str, set[str]] = {}
    for row in rows:
        if groups is not None and group_of(row["document"]) not in groups:
            continue
        key = match_key(row["name"])
        labelled.setdefault(row["chunk_id"], set()).add(key)
        if row["row"] == "expected":  # anywhere in its document: "/usr" may first occur in "/usr/bin"
            prefix = row["document"] + ":"
            hit = any(key in keys for chunk_id, keys in extracted.items() if chunk_id.startswith(prefix))
        else:
            hit = key in extracted.get(row["chunk_id"], set())
        if row["label"] == "keep":
            result.wanted += 1
            result.found += hit
        if row["row"] == "sample" and hit:
            result.keep += row["label"] == "keep"
            result.drop += row["label"] == "drop"
    for chunk_id, keys in labelled.items():
        result.unlabelled += len(extracted.get(chunk_id, set()) - keys)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--folds", type=int, default=3)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.labels.read_text().splitlines() if line.strip()]
    chunks: dict[str, str] = {}
    sources = [("chunks.jsonl", ""), *((f"chunks_round{n}.jsonl", f"round{n}|") for n in ROUNDS)]
    for name, prefix in sources:
        path = args.labels.parent / name
        if path.exists():  # round 2 parsed the documents again: its chunk ids get their own namespace
            for c in map(json.loads, path.read_text().splitlines()):
                chunks[prefix + c["chunk_id"]] = c["text"]
    nlp = load_model()
    docs = dict(zip(chunks, nlp.pipe(chunks.values(), batch_size=16), strict=True))
    runs = {rules: extracted_keys(LocalExtractor(nlp, rules=rules), docs) for rules in {*GRID, DEFAULT_RULES}}
    samples = sum(r["row"] == "sample" for r in rows)
    print(f"{samples} labelled mentions, {len(rows) - samples} expected names, {len(chunks)} chunks")

    expected = [r for r in rows if r["row"] == "expected"]
    base, shipped = score(rows, runs[BASELINE]), score(rows, runs[DEFAULT_RULES])
    for name, rules in (("baseline", BASELINE), ("shipped", DEFAULT_RULES)):
        print(f"{name}: expected names found {score(expected, runs[rules]).recall:.1%} of {len(expected)}")
    print(f"\nbaseline (pre-issue-27 behaviour) {base}")
    print(f"shipped  {DEFAULT_RULES}\n  in sample         {shipped}")
    print(
        f"  ratios vs baseline: precision x{shipped.precision / base.precision:.2f}, "
        f"recall proxy x{shipped.recall / base.recall:.2f}"
    )

    folds = folds_of((r["document"] for r in rows), args.folds)
    print(f"\n{args.folds}-fold by document (choose the setting with the best F0.5 on the other folds):")
    held = Score()
    for i, fold in enumerate(folds):
        train = set().union(*(f for j, f in enumerate(folds) if j != i))
        best = max(GRID, key=lambda rules: (score(rows, runs[rules], train).f(), rules == DEFAULT_RULES))
        out = score(rows, runs[best], fold)
        fixed = score(rows, runs[DEFAULT_RULES], fold)
        held = Score(*(a + b for a, b in zip(vars(held).values(), vars(out).values(), strict=True)))
        print(f"  fold {i + 1} {sorted(fold)}\n    chosen {best}\n    held out {out}\n    shipped  {fixed}")
    print(f"  out of sample (pooled held-out folds) {held}")

    after = args.labels.parent / "labelled_after_tuning.jsonl"
    if after.exists():  # mentions the shipped rules produced that no label covered, labelled afterwards
        later = [json.loads(line) for line in after.read_text().splitlines() if line.strip()]
        for row in later:
            row["row"] = "sample"
        found = score(later, runs[DEFAULT_RULES])
        print(
            f"\nlabelled after tuning ({len(later)} unseen mentions of the shipped rules): "
            f"precision {found.precision:.1%} ({found.keep}/{found.keep + found.drop})"
        )
    for n in ROUNDS:  # each round's sample is out of sample for the rules it was drawn from only
        path = args.labels.parent / f"labelled_round{n}.jsonl"
        if not path.exists():
            continue
        fresh = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for row in fresh:
            row["row"], row["chunk_id"] = "sample", f"round{n}|" + row["chunk_id"]
        found = score(fresh, runs[DEFAULT_RULES])
        seen = "out of sample" if n == ROUNDS[-1] else "in sample since the next round"
        print(
            f"\nround {n} sample, {seen} ({len(fresh)} mentions, drawn from rules version {n + 3}, "
            f"new seed, unseen names): shipped precision {found.precision:.1%} "
            f"({found.keep}/{found.keep + found.drop})"
        )
        for group in sorted({group_of(r["document"]) for r in fresh}):
            part = score(fresh, runs[DEFAULT_RULES], {group})
            print(f"  {group:45} {part.precision:6.1%} ({part.keep}/{part.keep + part.drop})")


if __name__ == "__main__":
    main()
