"""The package's own imports: every module imports, no two modules import each other back, and a command
whose module cannot be imported says so.

The cycle check reads the source (ast), so it sees every import a module makes, including the ones under
``if TYPE_CHECKING:`` and, in the second test, the ones deferred into functions: a deferred import that
closes a cycle still couples the two modules both ways.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_faildiag import cli

PACKAGE = "pytest_faildiag"
SOURCE = Path(__file__).resolve().parents[1] / PACKAGE


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _import_nodes(body: list[ast.stmt], inside_functions: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if inside_functions:
                yield from (n for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom))
        else:  # if/try/with/class bodies at module level run at import time (TYPE_CHECKING blocks: for mypy)
            for field in ("body", "orelse", "finalbody", "handlers"):
                yield from _import_nodes(
                    [n for n in getattr(node, field, []) if isinstance(n, ast.stmt | ast.excepthandler)],
                    inside_functions,
                )


def _targets(name: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The package's modules ``node`` (in module ``name``) imports, each with the packages it lies in, but
    not the importer's own parent packages (they are initialised before it, never because of it)."""
    if isinstance(node, ast.Import):
        wanted = [a.name for a in node.names]
    else:
        package = name.split(".") if MODULES[name].name == "__init__.py" else name.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
        module = ".".join(x for x in (base, node.module or "") if x)
        wanted = [module, *(f"{module}.{a.name}" for a in node.names)]
    own_parents = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    out = set()
    for target in wanted:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            candidate = ".".join(parts[:i])
            if candidate in MODULES and candidate not in own_parents and candidate != name:
                out.add(candidate)
    return out


def import_graph(inside_functions: bool) -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        graph[name] = set().union(*(_targets(name, n) for n in _import_nodes(tree.body, inside_functions)))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan), i.e. the import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_walk_sees_the_package_and_its_imports() -> None:
    graph = import_graph(inside_functions=False)
    assert len(graph) > 60 and f"{PACKAGE}.engine.api" in graph
    assert f"{PACKAGE}.parse.scan" in graph[f"{PACKAGE}.engine.api"]
    assert f"{PACKAGE}.rules" in graph[f"{PACKAGE}.parse.scan"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]


def test_no_module_imports_another_that_imports_it_back() -> None:
    assert cycles(import_graph(inside_functions=False)) == []


def test_no_cycle_closes_through_an_import_inside_a_function_either() -> None:
    """Not even the run wrapper and its monitor (they imported each other until the wrapper was split)."""
    assert cycles(import_graph(inside_functions=True)) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_of_the_package_imports(module: str) -> None:
    """A renamed or broken module fails here, by name, instead of turning some test into a skip."""
    importlib.import_module(module)


def test_a_command_whose_module_cannot_be_imported_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "faildiag_broken_command.py").write_text("import a_module_that_is_not_installed_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.COMMANDS, "broken", ("faildiag_broken_command", "a command that cannot load"))
    monkeypatch.delitem(sys.modules, "faildiag_broken_command", raising=False)
    assert cli.main(["broken", "--some-flag"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "faildiag_broken_command" in err and "a_module_that_is_not_installed_anywhere" in err, err
    assert "invalid choice" not in err
    listing = " ".join(cli.build_parser().format_help().split())  # argparse wraps long help lines
    assert "broken" in listing and "unavailable: cannot import faildiag_broken_command" in listing
