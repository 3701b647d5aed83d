"""The audit's world: two organizations, two users in each, and the unique markers they own.

Every run draws fresh names from a random tag, so markers never collide with a deployment's real
documents or with an earlier audit's leftovers: a marker found in an answer can only have come from
the seeded document or conversation it was written into. Names are made of invented syllables so
they are proper nouns to the graph extractor (entities, communities, claims) and rare terms to the
lexical encoder (sparse), and never real words.
"""

from __future__ import annotations

import random
import re
import secrets
from dataclasses import dataclass, field

from librarian.evaluation.leaks.pdf import text_pdf

SYLLABLES = (
    "vel", "mor", "quis", "tran", "dor", "hal", "vesk", "zor", "bri", "nel", "tov", "rua", "pex",
    "lin", "gar", "wen", "fio", "dra", "kel", "sud", "ombr", "ty", "xa", "lum", "fen", "rik",
)  # fmt: skip
PAGE_NAME = "leak-audit-page.pdf"
FLOOD_NAME = "leak-audit-flood.md"
TAG_PATTERN = re.compile(r"^[a-z0-9]{1,20}$")  # lower-case: user and organization ids stay valid
FLOOD_PARAGRAPHS = 12  # several chunks repeating the statistics term: its document frequency moves


@dataclass(frozen=True)
class Member:
    """One seeded user: the actor (`user`) in one library (`org`)."""

    user: str
    org: str
    role: str
    private: str  # written into this user's own conversation only


@dataclass(frozen=True)
class Library:
    """One seeded organization and the markers of its documents."""

    org: str
    person: str
    partner: str
    company: str
    keyword: str  # a rare term the sparse probes search for (sent by attackers: never evidence)
    secret: str  # the guarded code next to the keyword
    members: tuple[Member, Member]

    @property
    def notes_name(self) -> str:
        """The note's file name: unique, so a document listing that shows it shows this library."""
        return f"leak-audit-notes-{self.keyword}.md"

    @property
    def deleted_name(self) -> str:
        """A document the receipts probe uploads and deletes: its delete receipt names this file."""
        return f"leak-audit-deleted-{self.keyword}.md"

    @property
    def questions_name(self) -> str:
        """The judged-questions file the gate probe uploads: the gate's state names its source."""
        return f"leak-audit-questions-{self.keyword}.jsonl"

    @property
    def markers(self) -> tuple[str, ...]:
        """What counts as this organization's data when it shows up in someone else's response."""
        return (
            self.secret,
            self.person,
            self.partner,
            self.company,
            self.notes_name,
            self.deleted_name,
            self.questions_name,
        )


@dataclass(frozen=True)
class LeakWorld:
    """Both libraries, plus the statistics term that appears in both (for the sparse statistics probe)."""

    tag: str
    libraries: tuple[Library, Library]
    statistics_term: str
    threads: dict[str, str] = field(default_factory=dict, compare=False)  # user -> thread id
    runs: dict[str, str] = field(default_factory=dict, compare=False)  # user -> run id

    def library(self, org: str) -> Library:
        return next(lib for lib in self.libraries if lib.org == org)

    def members(self) -> list[Member]:
        return [m for lib in self.libraries for m in lib.members]

    def markers_of(self, member: Member, *, user_private: bool) -> tuple[str, ...]:
        """The member's evidence: their private marker, and (unless only that is asked) their library's."""
        if user_private:
            return (member.private,)
        return (*self.library(member.org).markers, member.private)


def _name(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(syllables))


def _library(rng: random.Random, tag: str, letter: str, used: set[str]) -> Library:
    def fresh(syllables: int) -> str:
        while (word := _name(rng, syllables)) in used:
            pass
        used.add(word)
        return word

    org = f"leak-audit-{tag}-{letter}"
    members = (
        Member(
            f"leak-{tag}-{letter}1", org, "admin", f"PRIVATE-{fresh(3).upper()}-{rng.randrange(10**6):06d}"
        ),
        Member(
            f"leak-{tag}-{letter}2", org, "member", f"PRIVATE-{fresh(3).upper()}-{rng.randrange(10**6):06d}"
        ),
    )
    return Library(
        org=org,
        person=f"{fresh(2).title()} {fresh(3).title()}",
        partner=f"{fresh(2).title()} {fresh(3).title()}",
        company=f"{fresh(3).title()} Foundry",
        keyword=fresh(4),
        secret=f"QX{rng.randrange(10**6):06d}-{fresh(2).upper()}",
        members=members,
    )


def plan_world(tag: str | None = None) -> LeakWorld:
    """A fresh world for one audit; `tag` (default: random) names its organizations and users."""
    tag = tag or secrets.token_hex(3)
    if not TAG_PATTERN.fullmatch(tag):
        raise ValueError(f"the tag must be 1-20 lower-case letters or digits, not {tag!r}")
    rng = random.Random(tag)
    used: set[str] = set()
    libraries = (_library(rng, tag, "a", used), _library(rng, tag, "b", used))
    term = next(w for w in iter(lambda: _name(rng, 4), None) if w not in used)
    return LeakWorld(tag=tag, libraries=libraries, statistics_term=term)


def notes_document(lib: Library, statistics_term: str) -> bytes:
    """The Markdown document of one library: its people, company, keyword and secret, in prose."""
    return (
        f"# {lib.company} notes\n\n"
        f"{lib.person} leads the {lib.company}. {lib.person} signed the {lib.company} charter with "
        f"{lib.partner}. {lib.partner} audits the {lib.company} every spring.\n\n"
        f"## Vault\n\nThe vault word of the {lib.company} is {lib.keyword}. The guarded code of the "
        f"{lib.company} vault is {lib.secret}.\n\n"
        f"## Register\n\nThe {statistics_term} register lists every archive box of the library.\n"
    ).encode()


def page_document(lib: Library) -> bytes:
    """The PDF of one library (the page-image channel renders it): the same facts on one page."""
    return text_pdf(
        [
            f"{lib.company} page",
            f"{lib.person} keeps the {lib.company} ledger with {lib.partner}.",
            f"The guarded code of the {lib.company} vault is {lib.secret}.",
        ]
    )


def flood_document(statistics_term: str) -> bytes:
    """Many chunks that repeat the statistics term: uploading it shifts that term's statistics."""
    paragraph = f"The {statistics_term} register is checked again; {statistics_term} entries are counted."
    sections = [f"## Section {i}\n\n{paragraph} {paragraph}\n" for i in range(FLOOD_PARAGRAPHS)]
    return ("# Register audit\n\n" + "\n".join(sections)).encode()
