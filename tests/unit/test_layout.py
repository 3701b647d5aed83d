"""The layout holds: imports point one way through the layers, no module circles, short functions.

The import graph is read from the source with `ast` rather than built by grimp or import-linter: both
refuse top-level modules that are not packages (`server.py`, `auth.py`, which `langgraph.json`
names). Imports inside functions count (a lazy import is still a dependency); imports under
`if TYPE_CHECKING:` do not, since they never run.
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO_DIR

# Highest first. A module may import its own top-level package and anything in a lower layer;
# packages that share a layer are independent of each other.
LAYERS: list[set[str]] = [
    {"server", "auth", "librarian_cli"},  # entry points: the served app, its auth, the `librarian` command
    {"webapi", "evals"},  # the HTTP layer; the evaluation runners that drive the product
    {"services"},  # the document service and run executors that start graph runs
    {"graphs"},  # LangGraph graphs: state, context, nodes, wiring
    {"tools"},  # the agent's tools, thin over the engines
    {"librarian"},  # the engines
]
LAYER_OF = {package: rank for rank, packages in enumerate(LAYERS) for package in packages}
MAX_FUNCTION_LINES = 80
LONG_REASON = "# long:"  # a function may be longer with this comment on its `def` line or above it


def product_modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the product (tests, bench and the web app aside)."""
    modules: dict[str, Path] = {}
    for top in LAYER_OF:
        single = REPO_DIR / f"{top}.py"
        if single.is_file():
            modules[top] = single
        for path in sorted((REPO_DIR / top).rglob("*.py")) if (REPO_DIR / top).is_dir() else []:
            parts = path.relative_to(REPO_DIR).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _imported_names(tree: ast.AST, package: str) -> Iterator[str]:
    """Every dotted name imported anywhere in the module (functions included), absolute."""
    pending = [tree]
    while pending:
        node = pending.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                pending.extend(child.orelse)  # the else branch of TYPE_CHECKING does run
                continue
            if isinstance(child, ast.Import):
                yield from (alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                yield base
                yield from (f"{base}.{alias.name}" for alias in child.names)
            pending.append(child)


def import_graph() -> dict[str, set[str]]:
    """Module -> the product modules it imports (a name resolves to its longest known module)."""
    modules = product_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for imported in _imported_names(ast.parse(path.read_text()), package):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not name.startswith(imported + "."):
                targets.add(imported)  # a package's own `__init__` is not a dependency edge
        graph[name] = targets
    return graph


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, targets in graph.items():
        top = module.split(".")[0]
        for target in targets:
            other = target.split(".")[0]
            if other != top and LAYER_OF[other] <= LAYER_OF[top]:
                wrong.append(f"{module} -> {target}")
    return sorted(wrong)


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle, one at a time: report one, drop one of its edges, look again."""
    edges = {module: set(targets) for module, targets in graph.items()}
    circles = []
    while True:
        try:
            graphlib.TopologicalSorter(edges).prepare()
            return circles
        except graphlib.CycleError as error:
            cycle = error.args[1]
            circles.append(cycle)
            edges[cycle[1]].discard(cycle[0])


def long_functions() -> list[str]:
    found = []
    for name, path in product_modules().items():
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = node.end_lineno - node.lineno + 1
            explained = any(LONG_REASON in line for line in lines[max(first - 2, 0) : node.lineno])
            if length > MAX_FUNCTION_LINES and not explained:
                found.append(f"{name}.{node.name}: {length} lines")
    return sorted(found)


def test_every_product_package_has_a_layer():
    tops = {path.name for path in REPO_DIR.iterdir() if (path / "__init__.py").is_file()}
    assert tops - {"tests", "bench"} <= set(LAYER_OF)


def test_imports_point_down_the_layers():
    assert layer_violations(import_graph()) == []


def test_no_module_imports_itself_through_a_circle():
    assert import_circles(import_graph()) == []


def test_no_product_function_is_long_without_a_reason():
    assert long_functions() == []


def test_the_checks_see_what_they_guard():
    """The reader must find lazy imports and skip TYPE_CHECKING ones, or the tests above prove nothing."""
    graph = import_graph()
    assert "librarian.stack" in graph["graphs.ingest"]
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import graphs.agent\n"
        "def f():\n    from tools import search\n"
    )
    names = set(_imported_names(ast.parse(source), "librarian"))
    assert "tools.search" in names and "graphs.agent" not in names
    assert layer_violations({"librarian.x": {"tools.search"}}) == ["librarian.x -> tools.search"]
    assert import_circles({"a": {"b"}, "b": {"a"}, "c": set()})
