"""The browser app's TypeScript type-checks (`tsc --noEmit -p web`, strict; web/tsconfig.json).

Vite only strips types, so a wrong call (a possibly-null element appended, a misspelt field of an
API answer) builds fine and fails in the browser. A fresh clone has no web/node_modules: the test
runs `npm ci` there first, as tests/e2e/test_js_sdk.py does for tests/js. It skips, saying why, only
when Node.js is absent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.web_packages import WEB_DIR, web_node_modules


@pytest.fixture(scope="module")
def tsc() -> Path:
    return web_node_modules("typescript/bin/tsc") / "typescript" / "bin" / "tsc"


def test_the_web_app_type_checks(tsc: Path) -> None:
    node = shutil.which("node")
    assert node
    done = subprocess.run(
        [node, str(tsc), "--noEmit", "-p", str(WEB_DIR)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"tsc --noEmit -p web found type errors:\n{done.stdout}{done.stderr}"


def test_the_check_is_strict() -> None:
    """Without `strict`, tsc lets nulls and implicit anys through and this check proves little."""
    config = json.loads((WEB_DIR / "tsconfig.json").read_text())
    assert config["compilerOptions"]["strict"] is True
    assert config["compilerOptions"]["noEmit"] is True
