"""The evaluation gate's routes: an organization admin uploads its judged questions; admins read the
gate's state (issue 30 §4).

    PUT /orgs/{org}/eval/questions   the judged questions file as the body (JSONL, or CSV as text/csv)
    GET /orgs/{org}/eval/gate        the stored questions and the accepted baseline, if any

Running the gate stays a command (`librarian eval gate`): it answers every question with the agent,
which is a deployment step's job, not a request's. The file is validated exactly as the command does
(`librarian.evaluation.gate.questions`), and a bad row is a 400 naming its line.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import Query, Request
from pydantic import BaseModel, Field

from librarian.evaluation.gate.questions import GateDataError, parse_questions
from librarian.evaluation.gate.store import GateStore, open_gate_store
from librarian.stack import get_stack
from webapi.access import Access, admin
from webapi.errors import ApiError
from webapi.routing import librarian_router, refusals

router = librarian_router()
MAX_QUESTIONS_BYTES = 5 * 1024 * 1024


def gate_store() -> GateStore:
    """The gate's store for the server's settings (the same one the command line uses)."""
    return open_gate_store(get_stack().settings)


class QuestionsStored(BaseModel):
    organization_id: str
    questions: int = Field(
        description="How many judged questions are now stored (the previous ones are replaced)."
    )
    source: str
    uploaded_at: str


class AcceptedRunSummary(BaseModel):
    id: int
    accepted_at: str
    configuration: str = Field(description="Digest of the settings, model ids and code version of the run.")
    metrics: dict[str, float | None]


class GateState(BaseModel):
    organization_id: str
    questions: int
    source: str | None = None
    uploaded_at: str | None = None
    accepted: AcceptedRunSummary | None = Field(description="The baseline the next gate compares with.")


@router.put(
    "/orgs/{org}/eval/questions",
    response_model=QuestionsStored,
    operation_id="putEvalQuestions",
    summary="Organization admins: replace the organization's judged questions (JSONL, or CSV as text/csv).",
    description="Each row: `question`, `relevant` (document paths, optionally a page) and/or `answer`. "
    "`librarian eval gate --org ORG` then runs them and compares with the last accepted run.",
    response_description="Stored.",
    responses=refusals(
        {
            400: "A bad row (the message names its line), or not UTF-8.",
            403: "Not an admin.",
            413: "Too large.",
        }
    ),
)
async def put_eval_questions(
    request: Request,
    access: Annotated[Access, admin("replace the judged questions")],
    filename: Annotated[str, Query(max_length=200, description="Shown in errors and the report.")] = "upload",
) -> QuestionsStored:
    body = await _body(request)
    fmt = "csv" if (request.headers.get("content-type") or "").startswith("text/csv") else "jsonl"
    try:
        text = body.decode("utf-8-sig")
        questions = parse_questions(text, fmt, name=filename)
    except UnicodeDecodeError:
        raise ApiError(400, "bad_questions", f"{filename} is not UTF-8 text") from None
    except GateDataError as exc:
        raise ApiError(400, "bad_questions", str(exc)) from None
    stored = await asyncio.to_thread(lambda: gate_store().save_questions(access.org, questions, filename))
    return QuestionsStored(
        organization_id=access.org,
        questions=len(questions),
        source=stored.source,
        uploaded_at=stored.uploaded_at,
    )


async def _body(request: Request) -> bytes:
    """The request body, refused as soon as it passes the limit (never read whole first)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_QUESTIONS_BYTES:
        raise ApiError(
            413, "too_large", f"the judged questions file is larger than {MAX_QUESTIONS_BYTES} bytes"
        )
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_QUESTIONS_BYTES:
            raise ApiError(
                413, "too_large", f"the judged questions file is larger than {MAX_QUESTIONS_BYTES} bytes"
            )
        chunks.append(chunk)
    return b"".join(chunks)


@router.get(
    "/orgs/{org}/eval/gate",
    response_model=GateState,
    operation_id="getEvalGate",
    summary="Organization admins: the stored judged questions and the accepted baseline run.",
    response_description="The gate's state.",
    responses=refusals({403: "Not an admin."}),
)
async def get_eval_gate(access: Annotated[Access, admin("read the evaluation gate")]) -> GateState:
    def read() -> tuple[Any, Any]:
        store = gate_store()
        return store.load_questions(access.org), store.last_accepted(access.org)

    stored, accepted = await asyncio.to_thread(read)
    summary = None
    if accepted is not None:
        summary = AcceptedRunSummary(
            id=accepted.id,
            accepted_at=accepted.accepted_at,
            configuration=str(accepted.record.get("fingerprint", {}).get("digest", "")),
            metrics=accepted.record.get("metrics", {}),
        )
    return GateState(
        organization_id=access.org,
        questions=len(stored.questions) if stored else 0,
        source=stored.source if stored else None,
        uploaded_at=stored.uploaded_at if stored else None,
        accepted=summary,
    )
