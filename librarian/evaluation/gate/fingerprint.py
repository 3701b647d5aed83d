"""The configuration a gate run was produced with: the settings that shape retrieval and answers, the
models' ids and the code version; never a secret.

It is stored with every accepted run, so that when the gate fails the report can say what changed
since (`top_k: 8 -> 1`), and its digest tells at a glance whether two runs share a configuration.
The settings are an allow-list, not "everything but secrets": a new setting holding a key or a URL
with a password can then never leak into a stored run or a report.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from librarian.settings import Settings
from librarian.stack import Stack

#: Settings that change what a question retrieves or how it is answered and checked.
SHAPING_SETTINGS = (
    "parser",
    "chunk_size",
    "dense_embedder",
    "openai_embedding_model",
    "openai_embedding_dimension",
    "sparse_embedder",
    "sparse_idf",
    "vector_index",
    "reranker",
    "rerank_model_path",
    "cohere_rerank_model",
    "alpha",
    "candidates",
    "top_k",
    "score_floor",
    "chat_model",
    "unsupported_sentences",
    "support_judge",
    "answer_floor",
)
_REPO = Path(__file__).resolve().parents[3]


def shaping_settings(settings: Settings) -> dict[str, Any]:
    """The allow-listed settings as JSON values (paths as strings)."""
    out: dict[str, Any] = {}
    for name in SHAPING_SETTINGS:
        value = getattr(settings, name)
        out[name] = str(value) if isinstance(value, Path) else value
    return out


def code_version() -> str:
    """The installed package's version, plus the git commit when run from a checkout."""
    try:
        version = metadata.version("librarian")
    except metadata.PackageNotFoundError:
        version = "unknown"
    try:
        commit = subprocess.run(
            ["git", "-C", str(_REPO), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{version}+{commit}" if commit else version


def fingerprint(stack: Stack) -> dict[str, Any]:
    """Settings, model ids and code version of `stack`, with a digest of them all."""
    body = {
        "settings": shaping_settings(stack.settings),
        "models": {
            "dense": stack.dense.model_id,
            "sparse": stack.sparse.model_id,
            "parser": stack.parser.cache_key,
        },
        "code": code_version(),
    }
    return {**body, "digest": digest(body)}


def digest(body: dict[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def changes(accepted: dict[str, Any], now: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(name, accepted, now) for every setting, model or code id that differs between two fingerprints."""
    flat_a, flat_n = _flatten(accepted), _flatten(now)
    names = [k for k in dict.fromkeys([*flat_a, *flat_n]) if k != "digest"]
    return [(k, flat_a.get(k), flat_n.get(k)) for k in names if flat_a.get(k) != flat_n.get(k)]


def _flatten(fp: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fp.items():
        if isinstance(value, dict) and key in ("settings", "models"):
            out.update({(k if key == "settings" else f"{key}.{k}"): v for k, v in value.items()})
        else:
            out[key] = value
    return out
