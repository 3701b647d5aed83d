"""The per-organization token budget of one graph build, checked at the build's stage boundaries.

`LIBRARIAN_GRAPH_BUILD_TOKEN_BUDGET` is the default for every organization and
`LIBRARIAN_GRAPH_BUILD_TOKEN_BUDGETS` (`org=tokens,org2=tokens`) overrides it per organization; 0
means unlimited. A setting rather than a stored value: budgets are an operator's decision, set where
the other limits are, and need no route of their own. Tokens are input plus output, as the provider
reports them (the ledger); before extraction the dry-run estimate stands in for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from librarian.errors import ConfigError, TenantError
from librarian.tenancy import validate_organization_id

STOPPED_REASON = "budget"


def parse_budgets(text: str | None) -> dict[str, int]:
    """`acme=50000, beta=0` → {"acme": 50000, "beta": 0}; a malformed entry is a `ConfigError` naming it."""
    budgets: dict[str, int] = {}
    for entry in (text or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        org, sep, value = entry.partition("=")
        try:
            if not sep:
                raise ValueError
            tokens = int(value.strip())
            if tokens < 0:
                raise ValueError
            budgets[validate_organization_id(org.strip())] = tokens
        except (ValueError, TenantError) as exc:
            raise ConfigError(
                f"LIBRARIAN_GRAPH_BUILD_TOKEN_BUDGETS: {entry!r} is not `organization=tokens` "
                "(tokens a whole number, 0 for unlimited)"
            ) from exc
    return budgets


def build_budget(settings: Any, org: str) -> int:
    """The token budget of one build of `org`: its override, else the default; 0 is unlimited."""
    overrides = parse_budgets(getattr(settings, "graph_build_token_budgets", ""))
    return overrides.get(org, int(getattr(settings, "graph_build_token_budget", 0) or 0))


@dataclass(frozen=True)
class BudgetVerdict:
    """Whether a build may go on past a stage boundary, and the figures that decided it."""

    limit: int
    spent: int
    estimated: int
    stage: str

    @property
    def exceeded(self) -> bool:
        return self.limit > 0 and self.spent + self.estimated > self.limit

    def figures(self) -> dict[str, Any]:
        return {"limit": self.limit, "spent": self.spent, "estimated": self.estimated, "stage": self.stage}

    def reason(self) -> str:
        ahead = f" and an estimated {self.estimated} more" if self.estimated else ""
        return (
            f"stopped: budget. The build spent {self.spent} tokens{ahead} against its budget of "
            f"{self.limit} before {self.stage}; the published graph is unchanged"
        )
