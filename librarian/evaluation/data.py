"""Judged data: BEIR folders (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv) and QA files (JSONL).

Bad input gets an error that names the file and what is wrong, never a stack trace of a KeyError.
"""

from __future__ import annotations

import csv
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,150}")


class EvalDataError(ValueError):
    """The judged data cannot be read; the message names the file and the problem."""


@dataclass
class Beir:
    corpus: dict[str, str]  # doc id -> "title\n\ntext"
    queries: dict[str, str]  # judged queries only
    qrels: dict[str, dict[str, int]]
    name: str = ""
    split: str = ""


@dataclass
class QAItem:
    id: str
    question: str
    answers: list[str]
    supporting_doc_ids: list[str]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise EvalDataError(f"{path} does not exist")
    rows = []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise EvalDataError(f"{path}:{number}: not JSON ({exc.msg})") from exc
            if not isinstance(row, dict):
                raise EvalDataError(f"{path}:{number}: expected a JSON object")
            rows.append(row)
    return rows


def load_beir(
    folder: Path,
    split: str = "test",
    *,
    limit_queries: int | None = None,
    limit_docs: int | None = None,
    seed: int = 0,
) -> Beir:
    """A BEIR folder's judged queries; `limit_docs` keeps every document judged for the kept queries
    plus random others up to that many (a smaller, harder-than-random sample for a quick check)."""
    folder = Path(folder)
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        have = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
        raise EvalDataError(f"{qrels_path} does not exist (splits here: {', '.join(have) or 'none'})")
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8") as f:
        reader = csv.DictReader(f, delimiter="\t")
        if not {"query-id", "corpus-id", "score"} <= set(reader.fieldnames or []):
            raise EvalDataError(f"{qrels_path}: expected the header query-id, corpus-id, score")
        for row in reader:
            try:
                qrels.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(row["score"])
            except (TypeError, ValueError) as exc:
                raise EvalDataError(f"{qrels_path}: bad score in {row}") from exc
    corpus: dict[str, str] = {}
    for d in _jsonl(folder / "corpus.jsonl"):
        if "_id" not in d:
            raise EvalDataError(f"{folder / 'corpus.jsonl'}: a document has no _id")
        title, text = str(d.get("title") or "").strip(), str(d.get("text") or "").strip()
        corpus[str(d["_id"])] = f"{title}\n\n{text}" if title else text
    queries = {
        str(q["_id"]): str(q.get("text", ""))
        for q in _jsonl(folder / "queries.jsonl")
        if "_id" in q and str(q["_id"]) in qrels
    }
    if not queries:
        raise EvalDataError(f"{folder}: no query in queries.jsonl has judgments in {qrels_path.name}")
    if limit_queries:
        queries = dict(list(queries.items())[:limit_queries])
    if limit_docs and limit_docs < len(corpus):
        judged = {d for q in queries for d in qrels[q] if d in corpus}
        others = sorted(set(corpus) - judged)
        random.Random(seed).shuffle(others)
        keep = judged | set(others[: max(0, limit_docs - len(judged))])
        corpus = {d: t for d, t in corpus.items() if d in keep}
    return Beir(corpus, queries, {q: qrels[q] for q in queries}, name=folder.name, split=split)


def load_qa(path: Path) -> list[QAItem]:
    """`{question, answers, supporting_doc_ids}` per line (`id` optional)."""
    items = []
    for number, row in enumerate(_jsonl(Path(path)), start=1):
        question, answers = row.get("question"), row.get("answers")
        if not isinstance(question, str) or not question.strip():
            raise EvalDataError(f"{path}: item {number} has no question")
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise EvalDataError(f"{path}: item {number}: answers must be a list of strings")
        supporting = row.get("supporting_doc_ids") or []
        items.append(QAItem(str(row.get("id", number)), question, answers, [str(d) for d in supporting]))
    if not items:
        raise EvalDataError(f"{path} holds no questions")
    return items


def filename_for(doc_id: str) -> str:
    """The file a corpus document is uploaded as: readable when the id is safe, hex otherwise."""
    if _SAFE_ID.fullmatch(doc_id):
        return f"d-{doc_id}.txt"
    return f"h-{doc_id.encode().hex()}.txt"


def doc_id_from_path(path: str) -> str:
    """Inverse of `filename_for` (accepts `docs/NAME`)."""
    name = path.rsplit("/", 1)[-1].removesuffix(".txt")
    kind, _, rest = name.partition("-")
    return bytes.fromhex(rest).decode() if kind == "h" else rest
