"""Query parsing for graph retrieval: intent entities, keywords and themes.

With a chat model configured, the model parses (JSON `{"entities", "keywords", "themes"}`, read with
the repair rules); a reply that cannot be repaired falls back to the rule-based parse, so a flaky
model never fails a search. Offline, rules do it:
- entities: runs of capitalised words (inner "of", "the", "and", "de"... allowed: "Bank of
  England"), and quoted phrases; a capitalised question word or article at the start is dropped; a
  run joined by "and" also yields each side of two words or more ("Scott Derrickson and Ed Wood");
- keywords: the remaining content words (stop words and question words dropped), in order;
- themes: overview cues ("themes", "overall", "how does X change", "trends", "summarise" ...).

The reference parses themes and never uses them (a defect); we use them to choose local vs global
(`librarian.answers.modes.choose_mode`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from librarian.chat_model import internal_model
from librarian.embeddings.text_terms import STOPWORDS
from librarian.graph.json_repair import parse_llm_json, validate_query_parse

_QUESTION_WORDS = (
    "what who whom whose which when where why how is are was were do does did can could should would will "
    "in on at of for to by the a an and or tell name list give describe explain show find"
)
QUESTION_WORDS = frozenset(_QUESTION_WORDS.split())
_CONNECTORS = frozenset({"of", "the", "and", "de", "da", "von", "van", "del", "la", "le", "du", "&"})
_WORD = re.compile(r"[\w][\w'’.\-]*", re.UNICODE)
_QUOTED = re.compile(r"[\"“”]([^\"“”]{2,80})[\"“”]")

THEME_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile(pattern, re.IGNORECASE))
    for label, pattern in (
        ("themes", r"\b(themes?|motifs?|morals?|lessons?|messages?)\b"),
        (
            "overview",
            r"\b(overview|summar(?:y|ise|ize|ies)|gist|big picture|in general|as a whole|overall)\b",
        ),
        (
            "main_ideas",
            r"\b(main|major|key|central|recurring|common|dominant)\s+(ideas?|topics?|points?|"
            r"issues?|concerns?|arguments?|findings?|events?|threads?)\b",
        ),
        ("trends", r"\b(trends?|patterns?|evolution|over time|across (?:the|all|every|its)\b)"),
        ("change", r"\bhow (?:does|did|do|has|have)\b.{1,80}\b(chang|evolv|develop|transform|grow|shift)\w*"),
        ("about", r"\bwhat (?:is|are) (?:the|this|these)\s+(?:\w+\s+){0,3}(?:about|mainly about)\b"),
        ("synthesis", r"\b(compare|contrast|relationship between the (?:themes?|parts?))\b"),
    )
)


@dataclass
class ParsedQuery:
    entities: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    themes: list[str] = field(default_factory=list)
    parser: str = "rules"  # rules | llm


def _is_capitalised(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit()


def rule_entities(question: str) -> list[str]:
    """Capitalised runs and quoted phrases, in order of appearance, deduplicated."""
    found: list[str] = [m.strip() for m in _QUOTED.findall(question)]
    words = [m.group().strip(".'’") for m in _WORD.finditer(question)]
    run: list[str] = []

    def close() -> None:
        while run and run[-1].lower() in _CONNECTORS:
            run.pop()
        if run:
            found.append(" ".join(run))
            if "and" in run or "&" in run:  # "Scott Derrickson and Ed Wood": also each multi-word side
                sides = " ".join(run).replace(" & ", " and ").split(" and ")
                found.extend(side for side in sides if len(side.split()) >= 2)
        run.clear()

    for i, word in enumerate(words):
        if not word:
            close()
            continue
        if _is_capitalised(word):
            if not run and word.lower() in QUESTION_WORDS | STOPWORDS:
                continue  # "What", "The" at the start of a run are not names
            if word.isdigit() and not run:
                continue  # a bare number is a keyword, not a name
            run.append(word)
        elif run and word.lower() in _CONNECTORS and i + 1 < len(words) and _is_capitalised(words[i + 1]):
            run.append(word)
        else:
            close()
    close()
    return list(dict.fromkeys(e for e in found if e))


def rule_keywords(question: str) -> list[str]:
    words = [m.group().strip(".'’").lower() for m in _WORD.finditer(question)]
    kept = [w for w in words if len(w) > 2 and w not in STOPWORDS and w not in QUESTION_WORDS]
    return list(dict.fromkeys(kept))


def rule_themes(question: str) -> list[str]:
    return [label for label, pattern in THEME_PATTERNS if pattern.search(question)]


def parse_rules(question: str) -> ParsedQuery:
    return ParsedQuery(rule_entities(question), rule_keywords(question), rule_themes(question), "rules")


PARSE_PROMPT = """Extract search terms from the question below. Reply with JSON only:
{{"entities": [names of specific people, places, organisations, works or things it mentions],
 "keywords": [other important content words or short phrases],
 "themes": [broad topics it asks about, only if it asks for an overview, themes, trends or a summary]}}

Question: {question}"""


async def parse_query(question: str, model: Any | None = None) -> ParsedQuery:
    """The model's parse when a model is given and its reply is usable; the rules otherwise."""
    if model is None:
        return parse_rules(question)
    try:
        reply = await internal_model(model).ainvoke(PARSE_PROMPT.format(question=question))
        content = getattr(reply, "content", reply)
        parsed = validate_query_parse(parse_llm_json(content if isinstance(content, str) else str(content)))
    except Exception:  # unreadable reply, HTTP error: the rules still give a usable parse
        return parse_rules(question)
    return ParsedQuery(parsed["entities"], parsed["keywords"], parsed["themes"], "llm")
