"""An organization's judged questions: the upload format (JSONL or CSV) and its validation.

Each row is a `question` with its `relevant` documents (paths, optionally a page) and/or a gold
`answer`. A bad row is refused with its line number and what is wrong, so the person who wrote the
file can fix it; nothing is guessed (a row without judgments would score as a silent zero).

JSONL: `{"question": str, "relevant": [str | {"path": str, "page": int}], "answer": str | [str],
"id": str}`. CSV (header required): columns `question`, `relevant` (entries separated by `;`, each
`docs/NAME` or `docs/NAME#page=N`), `answer` (alternatives separated by `|`), optional `id`.
A bare file name in `relevant` means `docs/NAME`, as on the command line.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from librarian.errors import InvalidPathError
from librarian.evaluation.data import EvalDataError
from librarian.files.paths import DOCS_PREFIX, document_path, validate_document_path

Format = Literal["jsonl", "csv"]
MAX_QUESTIONS = 5000  # a gate runs every question on each deployment: keep it a gate, not a benchmark
MAX_QUESTION_CHARS = 2000
_PAGE_SUFFIX = re.compile(r"^(?P<path>.+)#page=(?P<page>\d+)$")


class GateDataError(EvalDataError):
    """The judged questions cannot be used; the message names the line and the problem."""


@dataclass(frozen=True)
class Relevant:
    """A document judged relevant; with `page`, only that page of it counts as a hit."""

    path: str
    page: int | None = None

    def matches(self, path: str, page: int | None) -> bool:
        return self.path == path and (self.page is None or self.page == page)

    @property
    def key(self) -> str:
        return self.path if self.page is None else f"{self.path}#page={self.page}"


@dataclass(frozen=True)
class JudgedQuestion:
    id: str
    question: str
    relevant: tuple[Relevant, ...] = ()
    answers: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        row = asdict(self)
        row["relevant"] = [{"path": r.path, **({"page": r.page} if r.page else {})} for r in self.relevant]
        row["answers"] = list(self.answers)
        return row

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> JudgedQuestion:
        """Back from the store (rows written by `to_json`, already validated)."""
        relevant = tuple(Relevant(r["path"], r.get("page")) for r in row.get("relevant", []))
        return cls(str(row["id"]), row["question"], relevant, tuple(row.get("answers", [])))


def guess_format(filename: str) -> Format:
    """The format a file name says; anything but `.csv` is read as JSONL."""
    return "csv" if filename.lower().endswith(".csv") else "jsonl"


def parse_questions(text: str, fmt: Format, *, name: str = "questions") -> list[JudgedQuestion]:
    """Every row of a judged-questions file, validated; `GateDataError` names `name:line` of a bad row."""
    rows = _jsonl_rows(text, name) if fmt == "jsonl" else _csv_rows(text, name)
    questions: list[JudgedQuestion] = []
    seen: set[str] = set()
    for line, row in rows:
        where = f"{name}:{line}"
        item = _question(row, where, default_id=str(len(questions) + 1), csv_row=fmt == "csv")
        if item.id in seen:
            raise GateDataError(f"{where}: id {item.id!r} is used twice")
        seen.add(item.id)
        questions.append(item)
        if len(questions) > MAX_QUESTIONS:
            raise GateDataError(f"{name}: more than {MAX_QUESTIONS} questions")
    if not questions:
        raise GateDataError(f"{name} holds no questions")
    return questions


def _jsonl_rows(text: str, name: str) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GateDataError(f"{name}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise GateDataError(f"{name}:{number}: expected a JSON object")
        rows.append((number, row))
    return rows


def _csv_rows(text: str, name: str) -> list[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise GateDataError(f"{name}:1: not CSV ({exc})") from None
    if "question" not in header:
        raise GateDataError(f"{name}:1: the header must name a `question` column (got {', '.join(header)})")
    rows = []
    try:
        for row in reader:
            if None in row:
                raise GateDataError(f"{name}:{reader.line_num}: more cells than header columns")
            if any((v or "").strip() for v in row.values()):
                rows.append((reader.line_num, row))
    except csv.Error as exc:
        raise GateDataError(f"{name}:{reader.line_num}: not CSV ({exc})") from None
    return rows


def _question(row: dict[str, Any], where: str, *, default_id: str, csv_row: bool) -> JudgedQuestion:
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise GateDataError(f"{where}: `question` must be a non-empty string")
    if len(question) > MAX_QUESTION_CHARS:
        raise GateDataError(f"{where}: the question is longer than {MAX_QUESTION_CHARS} characters")
    raw_id = row.get("id")
    if raw_id in (None, ""):
        qid = default_id
    elif isinstance(raw_id, str | int) and not isinstance(raw_id, bool):
        qid = str(raw_id).strip()
    else:
        raise GateDataError(f"{where}: `id` must be a string or a number")
    relevant = _relevant(row.get("relevant"), where, csv_row=csv_row)
    answers = _answers(row.get("answer", row.get("answers")), where, csv_row=csv_row)
    if not relevant and not answers:
        raise GateDataError(f"{where}: give `relevant` documents or an `answer` (or both)")
    return JudgedQuestion(qid or default_id, question.strip(), relevant, answers)


def _relevant(value: Any, where: str, *, csv_row: bool) -> tuple[Relevant, ...]:
    if value is None or value == "":
        return ()
    if csv_row and isinstance(value, str):
        value = [part.strip() for part in value.split(";") if part.strip()]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise GateDataError(f"{where}: `relevant` must be a list of document paths")
    out: list[Relevant] = []
    for entry in value:
        item = _relevant_entry(entry, where)
        if item not in out:
            out.append(item)
    return tuple(out)


def _relevant_entry(entry: Any, where: str) -> Relevant:
    page: Any = None
    if isinstance(entry, dict):
        path, page = entry.get("path"), entry.get("page")
        extra = set(entry) - {"path", "page"}
        if extra:
            raise GateDataError(f"{where}: unknown key in a `relevant` entry: {', '.join(sorted(extra))}")
    elif isinstance(entry, str):
        found = _PAGE_SUFFIX.match(entry.strip())
        path, page = (found["path"], int(found["page"])) if found else (entry.strip(), None)
    else:
        raise GateDataError(f"{where}: a `relevant` entry must be a path or {{path, page}}")
    if page is not None and (isinstance(page, bool) or not isinstance(page, int) or page < 1):
        raise GateDataError(f"{where}: `page` must be a whole number from 1")
    if not isinstance(path, str) or not path.strip():
        raise GateDataError(f"{where}: a `relevant` entry has no document path")
    try:
        path = validate_document_path(path) if path.startswith(DOCS_PREFIX) else document_path(path)
    except InvalidPathError as exc:
        raise GateDataError(f"{where}: {exc}") from None
    return Relevant(path, page)


def _answers(value: Any, where: str, *, csv_row: bool) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if csv_row and isinstance(value, str):
        value = value.split("|")
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise GateDataError(f"{where}: `answer` must be a string or a list of strings")
    return tuple(a.strip() for a in value if a.strip())
