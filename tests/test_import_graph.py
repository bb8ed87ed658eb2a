"""No import cycles among the modules of python/rmq and bench.

The graph has an edge from a module to every module of rmq or bench it imports, wherever
the import statement is: at the top, inside a function (a deferred import) or under
``if TYPE_CHECKING:`` (a cycle of types is still a cycle a reader has to untangle). A
stub (``.pyi``) counts as its module's source. Importing a module runs its package's
``__init__`` first; that implicit step is not an edge, but an explicit import of a
package (``from rmq.client import Client``) is an edge to the package's ``__init__``.
Imports by name at run time (``importlib.import_module``) are not seen.
"""

from __future__ import annotations

import ast
from collections.abc import Container, Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# (directory on sys.path, top-level package under it)
PACKAGES = [(ROOT / "python", "rmq"), (ROOT, "bench")]

Graph = Mapping[str, frozenset[str]]


def module_files() -> dict[str, list[tuple[Path, bool]]]:
    """Module name -> its source files (``.py`` and ``.pyi``), each with whether it is
    a package's ``__init__``."""
    found: dict[str, list[tuple[Path, bool]]] = {}
    for base, top in PACKAGES:
        for path in sorted((base / top).rglob("*.py*")):
            if path.suffix not in (".py", ".pyi"):
                continue
            parts = list(path.relative_to(base).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found.setdefault(".".join(parts), []).append((path, is_package))
    return found


def imported_modules(
    tree: ast.AST, module: str, is_package: bool, modules: Container[str]
) -> Iterable[str]:
    """The modules of ``modules`` that the import statements of ``tree`` import:
    ``import X`` imports X, ``from X import Y`` imports module X.Y if there is one, else
    X (for a name X defines)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package, up level - 1
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, node.module] if node.module else package)
            else:
                base = node.module or ""
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    yield f"{base}.{alias.name}"
                elif base in modules:
                    yield base


def import_graph() -> Graph:
    """Module -> the modules of rmq and bench it imports."""
    files = module_files()
    graph: dict[str, frozenset[str]] = {}
    for module, sources in files.items():
        targets: set[str] = set()
        for path, is_package in sources:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            targets.update(imported_modules(tree, module, is_package, files))
        graph[module] = frozenset(targets - {module})
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    without recursion), each sorted; a module importing itself is not a cycle here."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def describe(graph: Graph, component: list[str]) -> str:
    members = set(component)
    lines = [f"  {m} imports {', '.join(sorted(graph[m] & members))}" for m in component]
    return "\n".join(lines)


def test_no_module_of_rmq_or_bench_is_part_of_an_import_cycle() -> None:
    graph = import_graph()
    found = cycles(graph)
    report = "\n\n".join(describe(graph, component) for component in found)
    assert not found, f"import cycles:\n{report}"


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert "rmq.client.producer" in graph["rmq.client.client"]  # at the top
    assert "rmq.client" in graph["rmq"]  # inside a function, and under TYPE_CHECKING
    assert "rmq.errors" in graph["rmq._rmqcore._transport"]  # a stub
    assert "rmq._rmqcore._store" in graph["rmq._rmqcore"]  # relative, from a stub package
    assert "rmq.errors" in graph["rmq.client.producer"]  # from rmq import errors
    assert "rmq.client.producer" in graph["rmq.client"]  # a package's __init__
    assert "bench.harness" in graph["bench.grpc"]
    assert "rmq.client" in graph["bench.grpc_systems"]  # bench's imports of rmq
    assert "rmq" not in graph["rmq.client.producer"]  # no edge for the parent package


def test_a_cycle_is_found_with_every_module_on_it() -> None:
    graph = {
        "a": frozenset({"b"}),
        "b": frozenset({"c"}),
        "c": frozenset({"a", "d"}),
        "d": frozenset({"d"}),
        "e": frozenset({"a"}),
    }
    assert cycles(graph) == [["a", "b", "c"]]


ENGINE = ROOT / "crates" / "rmqcore" / "src"


def engine_graph() -> Graph:
    """The engine's top-level modules (a file or a folder each) and the ones each uses
    through a `crate::` path."""
    import re

    graph: dict[str, frozenset[str]] = {}
    for entry in sorted(ENGINE.iterdir()):
        if entry.name == "lib.rs":
            continue
        name = entry.stem if entry.is_file() else entry.name
        sources = [entry] if entry.is_file() else sorted(entry.rglob("*.rs"))
        used = {
            match
            for source in sources
            for match in re.findall(r"crate::([a-z_]+)", source.read_text(encoding="utf-8"))
        }
        graph[name] = frozenset(used - {name})
    return graph


def test_no_module_of_the_engine_is_part_of_a_use_cycle() -> None:
    graph = engine_graph()
    assert {"store", "index", "consume_queue", "files", "record"} <= set(graph)
    found = cycles(graph)
    assert not found, "\n".join(describe(graph, component) for component in found)
