"""web/'s locked npm packages (TypeScript, Vite, axe-core) for the tests that need them.

A fresh clone has no web/node_modules (only the built app in web/dist is committed), so the first test
that needs them runs `npm ci` in web/, as tests/e2e/test_js_sdk.py does for tests/js. Where Node.js is
absent the caller skips, saying why; anywhere else a failed install fails the test.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

WEB_DIR = Path(__file__).resolve().parents[1] / "web"
NODE_MODULES = WEB_DIR / "node_modules"


def web_node_modules(needed: str) -> Path:
    """web/node_modules, installed from web/package-lock.json if `needed` (a path inside it) is missing."""
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed (`node` not on PATH): this test needs web/'s npm packages")
    if not (NODE_MODULES / needed).exists():
        npm = shutil.which("npm")
        assert npm, "node is installed but npm is not: install npm to fetch web/'s locked packages"
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=WEB_DIR, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"npm ci in web/ failed:\n{done.stdout}\n{done.stderr}"
        assert (NODE_MODULES / needed).exists(), f"npm ci in web/ did not install {needed}"
    return NODE_MODULES
