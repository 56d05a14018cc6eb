"""The package's shape (docs/architecture.md): no import circle, few modules at the top."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import olearn

PACKAGE = Path(__file__).resolve().parent.parent / "olearn"
TOP_LEVEL_MODULES = 8  # besides __init__ and __main__


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, known: set[str]) -> set[str]:
    """The olearn modules ``tree`` imports, at module level or inside functions alike; imports
    under ``if TYPE_CHECKING:`` never run and are left out."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                found.add(full if full in known else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m in known}


def _sources() -> dict[str, Path]:
    """Each olearn module's name -> its file."""
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def import_graph() -> dict[str, set[str]]:
    """Each olearn module -> the olearn modules it imports (a package's ``__init__`` is left
    out as a target: importing ``olearn.data.x`` runs ``olearn/data/__init__.py``, which
    imports nothing)."""
    paths = _sources()
    known = set(paths)
    return {name: _imports(ast.parse(path.read_text()), known) - {name, "olearn"}
            for name, path in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_no_import_circle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_package_inits_import_nothing_of_olearn():
    known = {"olearn"} | set(import_graph())
    for init in PACKAGE.rglob("__init__.py"):
        if init.parent != PACKAGE:
            assert _imports(ast.parse(init.read_text()), known) == set()


def test_few_modules_at_the_top_level():
    top = [p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(top) <= TOP_LEVEL_MODULES, top


NUMBA_DEFINITION = re.compile(
    r"^\s*@(njit|intrinsic|overload)\b|\bnjit\(|structref\.(define|register)", re.M)


def _kernel_closure(graph: dict[str, set[str]]) -> set[str]:
    """The modules that define numba code, and every module they import, transitively."""
    todo = [m for m, p in _sources().items() if NUMBA_DEFINITION.search(p.read_text())]
    closure: set[str] = set()
    while todo:
        module = todo.pop()
        if module not in closure:
            closure.add(module)
            todo.extend(graph[module])
    return closure


def test_the_kernel_cache_hash_covers_every_source_kernels_depend_on():
    """numba's cache folder is named by a hash of KERNEL_SOURCES only (olearn/__init__.py): a
    module a kernel imports must be among them, else editing it would leave stale kernels."""
    closure = _kernel_closure(import_graph())
    assert "olearn.kernel.loop" in closure and "olearn.learners.losses" in closure
    outside = []
    for module in closure:
        relative = module.split(".", 1)[1].replace(".", "/") if "." in module else ""
        first = relative.split("/")[0]
        if first not in olearn.KERNEL_SOURCES and f"{relative}.py" not in olearn.KERNEL_SOURCES:
            outside.append(module)
    assert outside == []


MAX_PARAMETERS = 12  # kernel state travels in named bundles (olearn/kernel/bundles.py)


def test_no_function_takes_more_than_twelve_parameters():
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                count = (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                         + (a.vararg is not None) + (a.kwarg is not None))
                if count > MAX_PARAMETERS:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.name} ({count})")
    assert long == []
