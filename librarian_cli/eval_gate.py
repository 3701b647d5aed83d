"""`librarian eval gate`: an organization's judged questions as a regression gate for a deployment.

    librarian eval gate --org ORG --questions FILE     # store the judged questions (JSONL or CSV), then run
    librarian eval gate --org ORG                      # run, compare with the last accepted run
    librarian eval gate --org ORG --accept             # ... and, when it passes, make this run the baseline
    librarian eval gate --org ORG --accept --force     # make this run the baseline even if it regressed

Exit codes: 0 no regression beyond tolerance (or no accepted run yet: it says so), 1 a regression
beyond tolerance, 2 judged questions missing or unusable, or an organization without documents.
The run uses the organization's current index and the current settings (the environment), so a
deployment can gate a model or setting change on it: run it with the new settings before switching.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from librarian_cli.common import add_org_argument

EXIT_PASS, EXIT_REGRESSION, EXIT_BAD_INPUT = 0, 1, 2


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be within 0 and 1")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def add_gate_command(sub: Any) -> argparse.ArgumentParser:
    """`gate` under `librarian eval`; run it with `run_gate_command(args)`."""
    from librarian.evaluation.gate.defaults import (
        DEFAULT_LATENCY_TOLERANCE,
        DEFAULT_TOLERANCE,
        LATENCY_SLACK_MS,
    )

    gate = sub.add_parser(
        "gate",
        help="an organization's judged questions against its current configuration; exit 1 on a regression",
    )
    add_org_argument(gate)
    gate.add_argument(
        "--questions",
        type=Path,
        default=None,
        help="store this file as the organization's judged questions first (JSONL or CSV: question, "
        "relevant, answer), replacing the previous ones",
    )
    gate.add_argument("--format", choices=["jsonl", "csv"], default=None, help="default: from the file name")
    gate.add_argument(
        "--accept", action="store_true", help="store this run as the new baseline when it passes"
    )
    gate.add_argument("--force", action="store_true", help="with --accept: store it even if it regressed")
    gate.add_argument("--no-answers", action="store_true", help="retrieval metrics only (no agent answers)")
    gate.add_argument(
        "--tolerance",
        type=_fraction,
        default=DEFAULT_TOLERANCE,
        help=f"largest allowed drop of nDCG, recall, citation precision, answers contained, and rise of the "
        f"unsupported-sentence rate (absolute; default {DEFAULT_TOLERANCE})",
    )
    gate.add_argument(
        "--latency-tolerance",
        type=_non_negative,
        default=DEFAULT_LATENCY_TOLERANCE,
        help="largest allowed relative slow-down of p50 latency "
        f"(default {DEFAULT_LATENCY_TOLERANCE:g}: twice as slow)",
    )
    gate.add_argument(
        "--latency-slack-ms",
        type=_non_negative,
        default=LATENCY_SLACK_MS,
        help=f"a slow-down smaller than this is never a regression (default {LATENCY_SLACK_MS:g} ms)",
    )
    gate.add_argument("--json", action="store_true", help="print the report as JSON")
    gate.add_argument("--html", type=Path, default=None, help="also write a self-contained HTML report here")
    return gate


def agent_answerer(stack: Any) -> Any:
    """The agent on the search path (the configured chat model, or extractive answers offline), with its
    verified citation records; computed from the answer when a path made none."""
    from langchain_core.messages import HumanMessage

    from graphs.agent import build_agent
    from librarian.answers.citations import verify_answer
    from librarian.evaluation.gate.run import Answered

    agent = build_agent(lambda: stack, graph_routing=False)

    def answer(organization_id: str, question: str) -> Answered:
        state = agent.invoke(
            {"messages": [HumanMessage(question)]}, context={"organization_id": organization_id}
        )
        text = str(state["messages"][-1].content)
        sources = list(state.get("sources") or [])
        citations = state.get("citations")
        if citations is None:
            citations = verify_answer(text, sources)
        return Answered(text, sources, list(citations))

    return answer


def run_gate_command(args: argparse.Namespace) -> int:
    """Store questions if given, run, compare, print; the exit code is the gate's verdict."""
    from librarian.evaluation.gate.compare import Tolerances, compare, regressed
    from librarian.evaluation.gate.questions import GateDataError, guess_format, parse_questions
    from librarian.evaluation.gate.report import gate_report
    from librarian.evaluation.gate.run import run_gate
    from librarian.evaluation.gate.store import open_gate_store
    from librarian.evaluation.report import to_html, to_json, to_text
    from librarian.settings import load_settings
    from librarian.stack import get_stack

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.force and not args.accept:
        say("error: --force only goes with --accept")
        return EXIT_BAD_INPUT
    stack = get_stack(load_settings())
    store = open_gate_store(stack.settings)
    org = args.org
    try:
        if args.questions is not None:
            text = _read_text(args.questions)
            fmt = args.format or guess_format(args.questions.name)
            questions = parse_questions(text, fmt, name=args.questions.name)
            store.save_questions(org, questions, args.questions.name)
            say(f"stored {len(questions)} judged questions for {org} from {args.questions.name}")
        stored = store.load_questions(org)
        if stored is None:
            raise GateDataError(
                f"organization {org} has no judged questions: store them with --questions FILE"
            )
        if not stack.files.list(org):
            raise GateDataError(f"organization {org} has no documents to answer from")
    except GateDataError as exc:
        say(f"error: {exc}")
        return EXIT_BAD_INPUT
    tolerances = Tolerances(args.tolerance, args.latency_tolerance, args.latency_slack_ms)
    answerer = None if args.no_answers else agent_answerer(stack)
    say(f"running {len(stored.questions)} judged questions against {org}")
    run = run_gate(stack, org, stored.questions, answerer, progress=say)
    accepted = store.last_accepted(org)
    rows = compare(
        accepted.record["metrics"] if accepted else {}, run.summary.metrics, tolerances, run.not_run
    )
    report = gate_report(run, accepted, rows, tolerances)
    print(to_json(report) if args.json else to_text(report))
    if args.html:
        args.html.write_text(to_html(report), encoding="utf-8")
        say(f"wrote {args.html}")
    failed = bool(regressed(rows))
    if args.accept and not run.answered:
        say("not accepted: a baseline must measure answers too (run without --no-answers)")
    elif args.accept and (not failed or args.force):
        saved = store.accept(org, run.record())
        say(f"accepted as run {saved.id}: the baseline for the next gate")
        return EXIT_PASS
    if args.accept:
        say("not accepted: the run regressed (add --force to accept it anyway)")
    return EXIT_REGRESSION if failed else EXIT_PASS


def _read_text(path: Path) -> str:
    from librarian.evaluation.gate.questions import GateDataError

    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise GateDataError(f"{path} does not exist") from None
    except UnicodeDecodeError:
        raise GateDataError(f"{path} is not UTF-8 text") from None
    except OSError as exc:
        raise GateDataError(f"{path} cannot be read ({exc.strerror})") from None
