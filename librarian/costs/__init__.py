"""The cost ledger: what the model-backed modes spent, per organization and phase (issue 30 §3).

Model calls are attributed without threading arguments through every engine: each phase's entry point
opens a `cost_scope(ledger, org, phase)` (a context variable), and one callback handler attached where
chat models are built (`librarian.chat_model`) reads it when a call ends; the OpenAI embedder records
its own responses' `usage` the same way. Outside a scope nothing is recorded, and the offline defaults
(no chat model, local embeddings) never make a model call, so they report zero.

- `librarian.costs.scope`: the phases, the context variable and `record_usage`;
- `librarian.costs.handler`: the LangChain callback handler (usage metadata, calls, wall time);
- `librarian.costs.ledger`: per-organization storage in the graph store's database (SQLite/PostgreSQL);
- `librarian.costs.estimate`: a build's token estimate before any call (`graph build --dry-run`);
- `librarian.costs.budget`: the per-organization build budget and its check at stage boundaries.
"""

from librarian.costs.scope import PHASES, Phase, cost_phase, cost_scope, current_scope, record_usage

__all__ = ["PHASES", "Phase", "cost_phase", "cost_scope", "current_scope", "record_usage"]
