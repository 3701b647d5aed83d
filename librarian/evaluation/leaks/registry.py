"""The audit's explicit channel list and the probe that reads each one.

`CHANNELS` is the list the report covers, whether or not a probe exists: adding a read channel to
the product means adding it here, and until a probe is registered the audit says `untested`.
`default_probes()` returns fresh probes (some keep state between `prepare` and `read`); a test swaps
one for a double with a broken filter.
"""

from __future__ import annotations

from librarian.evaluation.leaks.client_probes import A2aProbe, McpProbe, OpenAiProbe
from librarian.evaluation.leaks.conversation_probes import RunsProbe, StreamsProbe, ThreadsProbe
from librarian.evaluation.leaks.graph_probes import (
    ClaimsProbe,
    CommunitiesProbe,
    DriftProbe,
    EntitiesProbe,
    GlobalProbe,
)
from librarian.evaluation.leaks.page_probes import PageImagesProbe
from librarian.evaluation.leaks.probe import ChannelProbe
from librarian.evaluation.leaks.record_probes import DeleteReceiptsProbe, EvalGateProbe, GraphCostsProbe
from librarian.evaluation.leaks.search_probes import DenseProbe, SparseProbe, SparseStatisticsProbe
from librarian.evaluation.leaks.status_probes import DocumentStatusProbe

CHANNELS: tuple[str, ...] = (
    "dense",
    "sparse",
    "sparse-statistics",
    "graph-entities",
    "graph-communities",
    "graph-claims",
    "global-answers",
    "drift-answers",
    "page-images",
    "document-status",
    "delete-receipts",
    "eval-gate",
    "graph-costs",
    "threads",
    "streams",
    "runs",
    "mcp",
    "a2a",
    "openai",
)

PROBES: tuple[type[ChannelProbe], ...] = (
    DenseProbe,
    SparseProbe,
    SparseStatisticsProbe,
    EntitiesProbe,
    CommunitiesProbe,
    ClaimsProbe,
    GlobalProbe,
    DriftProbe,
    PageImagesProbe,
    DocumentStatusProbe,
    DeleteReceiptsProbe,
    EvalGateProbe,
    GraphCostsProbe,
    ThreadsProbe,
    StreamsProbe,
    RunsProbe,
    McpProbe,
    A2aProbe,
    OpenAiProbe,
)


def default_probes() -> dict[str, ChannelProbe]:
    """A fresh probe for every channel that has one, by channel name."""
    return {cls.name: cls() for cls in PROBES}
