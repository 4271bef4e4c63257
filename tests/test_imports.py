"""The package's modules import each other without a circle, and each imports on its own;
the test settings import without starting anything."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "indexnow_django"
ROOT = PACKAGE.parent


def module_names() -> dict[str, Path]:
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports, lazily (in a function) or not.

    Imports under ``if TYPE_CHECKING:`` do not run and do not count.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.add(module)
            # ``from . import x`` and ``from .pkg import module`` import modules too.
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {module for module in found if module in known and module != name}


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (as a path that ends where it starts), if any."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        for imported in sorted(graph[module]):
            circle = visit(imported, [*path, module])
            if circle:
                return circle
        done.add(module)
        return None

    for module in sorted(graph):
        circle = visit(module, [])
        if circle:
            return circle
    return None


def test_no_module_of_the_package_imports_itself_back():
    modules = module_names()
    graph = {name: imported_modules(name, path, set(modules)) for name, path in modules.items()}
    # A parent package is imported before its modules: only the edges the code writes count.
    assert graph["indexnow_django.jobs"], "the graph is empty: the parsing is broken"
    circle = find_circle(graph)
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_the_circle_finder_finds_one():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) is None


def test_every_module_imports_in_a_fresh_interpreter():
    script = (
        "import importlib, sys, django\n"
        "django.setup()\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module(name)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script, *module_names()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_importing_the_test_settings_starts_no_service():
    """Outside a test session the settings start no redis-server and no engine: they say
    where the addresses come from."""
    script = (
        "import os, pathlib\n"
        "try:\n"
        "    import tests.settings\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
        "me = str(os.getpid())\n"
        "children = [p for p in pathlib.Path('/proc').glob('[0-9]*/stat')\n"
        "            if p.read_text().rpartition(')')[2].split()[1] == me]\n"
        "print('children', len(children))\n"
    )
    started = ("REDIS_URL", "INDEXNOW_TEST_ENGINE_URL", "INDEXNOW_TEST_DB", "INDEXNOW_TEST_PG_NAME")
    env = {name: value for name, value in os.environ.items() if name not in started}
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "REDIS_URL is not set" in result.stdout
    assert "python -m pytest" in result.stdout
    assert result.stdout.strip().endswith("children 0")
