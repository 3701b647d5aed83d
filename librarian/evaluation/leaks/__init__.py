"""The leak audit (`librarian eval leaks`): every read channel tried as the other organization and
as the other user, with a positive control per channel and a per-channel tally. See docs/leak-audit.md.
"""

from librarian.evaluation.leaks.audit import run_audit
from librarian.evaluation.leaks.registry import CHANNELS, default_probes
from librarian.evaluation.leaks.tally import AuditReport, ChannelResult, to_json, to_text
from librarian.evaluation.leaks.tokens import AuditSetupError, TokenSigner

__all__ = [
    "CHANNELS",
    "AuditReport",
    "AuditSetupError",
    "ChannelResult",
    "TokenSigner",
    "default_probes",
    "run_audit",
    "to_json",
    "to_text",
]
