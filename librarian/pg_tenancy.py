"""PostgreSQL row-level security: the database's own guard that a row belongs to the caller's organization.

Every store already names the organization in each statement (the graph store's `Scoped` runner, the
pgvector index's `ns = ...`, the coordination's `organization_id = ...`). Row-level security is the
second guard behind that filter: each transaction that touches organization data first sets
`librarian.organization_id` for itself (`bind_organization`), and each table's policy admits only rows
of that organization, so a statement that forgets its filter sees nothing of another organization and
cannot write a row for one. A transaction that sets nothing sees no rows at all.

Reads that legitimately span organizations (the vector index's per-namespace counts, used to list
namespaces for a migration) say so explicitly (`read_all_organizations`); that flag admits reads
only, never writes.

PostgreSQL applies none of this to superusers or roles with BYPASSRLS, whatever the table says;
`FORCE ROW LEVEL SECURITY` makes it apply to the tables' owner, which is usually the application's
own role since the stores create their tables. `warn_if_unguarded` says so at start-up.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from psycopg import sql

logger = logging.getLogger(__name__)

ORGANIZATION_SETTING = "librarian.organization_id"
ALL_ORGANIZATIONS_SETTING = "librarian.all_organizations"
# Policy names carry a version, so a changed definition can be added beside an old one and the old dropped.
ORGANIZATION_POLICY = "librarian_organization_v1"
ALL_ORGANIZATIONS_POLICY = "librarian_all_organizations_read_v1"

# `(SELECT current_setting(...))` is evaluated once per statement (an init plan), not once per row;
# `missing_ok = true` makes an unset setting NULL, which equals nothing: no rows rather than an error.
_CURRENT_ORGANIZATION = sql.SQL("(SELECT current_setting({}, true))").format(
    sql.Literal(ORGANIZATION_SETTING)
)
_ALL_ORGANIZATIONS = sql.SQL("(SELECT current_setting({}, true)) = 'on'").format(
    sql.Literal(ALL_ORGANIZATIONS_SETTING)
)

_warned: set[str] = set()
_warned_lock = threading.Lock()


def bind_organization(cursor: Any, organization_id: str) -> None:
    """Scope the current transaction to `organization_id` (reset at its end: `set_config(..., true)`).

    Must run inside an explicit transaction: in autocommit mode the setting would end with this
    statement, and the statements after it would see no rows.
    """
    if not isinstance(organization_id, str) or not organization_id:
        raise ValueError("a transaction can only be scoped to a non-empty organization id")
    cursor.execute("SELECT set_config(%s, %s, true)", (ORGANIZATION_SETTING, organization_id))


def read_all_organizations(cursor: Any) -> None:
    """Let the current transaction read every organization's rows (writes stay scoped)."""
    cursor.execute("SELECT set_config(%s, 'on', true)", (ALL_ORGANIZATIONS_SETTING,))


def guard_table(cursor: Any, table: str, column: str) -> bool:
    """Enable and force row-level security on `table`, keyed by its organization `column`.

    Idempotent and cheap when already done (one catalogue read; no lock on the table), so every
    process runs it at start-up inside its schema lock. Returns False, with a warning, when the
    guard is missing and this role may not add it (it neither owns the table nor is a superuser):
    the stores keep working on their own filters, and the owner adds the guard on its next start.
    """
    row = cursor.execute(
        "SELECT c.relrowsecurity, c.relforcerowsecurity, pg_has_role(c.relowner, 'USAGE'), "
        "ARRAY(SELECT polname::text FROM pg_policy WHERE polrelid = c.oid) "
        "FROM pg_class c WHERE c.oid = to_regclass(%s)",
        (table,),
    ).fetchone()
    if row is None:
        raise LookupError(f"table {table!r} does not exist")
    enabled, forced, owner, policies = row
    missing = [name for name in (ORGANIZATION_POLICY, ALL_ORGANIZATIONS_POLICY) if name not in policies]
    if enabled and forced and not missing:
        return True
    if not owner:
        logger.warning(
            "row-level security is not set up on %s and this role does not own it: connect once as "
            "the table's owner to add the organization guard",
            table,
        )
        return False
    for statement in _guard_statements(table, column, missing, enable=not enabled, force=not forced):
        cursor.execute(statement)
    return True


def _guard_statements(
    table: str, column: str, missing: list[str], *, enable: bool, force: bool
) -> list[sql.Composed]:
    """Only what is missing: each ALTER takes the table's strongest lock, however briefly."""
    t, c = sql.Identifier(table), sql.Identifier(column)
    policies = {
        ORGANIZATION_POLICY: sql.SQL("CREATE POLICY {p} ON {t} USING ({c} = {o}) WITH CHECK ({c} = {o})"),
        ALL_ORGANIZATIONS_POLICY: sql.SQL("CREATE POLICY {p} ON {t} FOR SELECT USING ({a})"),
    }
    return [
        *([sql.SQL("ALTER TABLE {t} ENABLE ROW LEVEL SECURITY").format(t=t)] if enable else []),
        *([sql.SQL("ALTER TABLE {t} FORCE ROW LEVEL SECURITY").format(t=t)] if force else []),
        *(
            policies[name].format(
                p=sql.Identifier(name), t=t, c=c, o=_CURRENT_ORGANIZATION, a=_ALL_ORGANIZATIONS
            )
            for name in missing
        ),
    ]


def role_bypasses_guard(cursor: Any) -> str | None:
    """Why row-level security does not apply to the connected role (superuser, BYPASSRLS), or None."""
    row = cursor.execute(
        "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    if row is None:
        return None
    user, superuser, bypass = row
    if superuser:
        return f"role {user!r} is a superuser"
    if bypass:
        return f"role {user!r} has BYPASSRLS"
    return None


def warn_if_unguarded(cursor: Any, where: str) -> str | None:
    """Log once per process and database (`where`, no password) when the guard cannot apply."""
    reason = role_bypasses_guard(cursor)
    if reason is None:
        return None
    with _warned_lock:
        first = where not in _warned
        _warned.add(where)
    if first:
        logger.warning(
            "PostgreSQL at %s: %s, so row-level security does not guard organizations' rows; connect "
            "as a role that is neither superuser nor BYPASSRLS (see docs/deployment.md)",
            where,
            reason,
        )
    return reason
