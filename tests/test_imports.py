"""The package's modules import each other without a circle, and each imports on its own;
the test settings import without starting anything."""

from __future__ import annotations

import ast
import functools
import importlib
import os
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "indexnow_django"
ROOT = PACKAGE.parent


@functools.cache
def module_names() -> dict[str, Path]:
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


@functools.cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def package_of(name: str) -> str:
    return name if module_names()[name].name == "__init__.py" else name.rpartition(".")[0]


def imports_of(name: str, path: Path) -> set[str]:
    """Every module ``name`` imports, lazily (in a function), under ``TYPE_CHECKING``, at
    the top or by name (:func:`string_imports`): dotted names, the package's and others'
    alike. ``from pkg import module`` imports ``pkg.module`` (the package itself is
    imported before any of its modules, so it is no edge of the code's)."""
    known = set(module_names())
    package = package_of(name) if name in known else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            names = {f"{module}.{alias.name}" for alias in node.names}
            found.update(names)
            if not names <= known:
                found.add(module)
    if name in known:
        found.update(string_imports(name))
    return found


# Imports by name -----------------------------------------------------------------
# ``import_module(...)`` and ``import_string(...)`` import a module as surely as an
# import statement: their argument is worked out from the source where it can be (a
# literal, an f-string, a constant of the module or one it imports, a dict of dotted
# paths and its ``[...]``/``.get(...)``, a class attribute or a property of the package,
# ``__name__``), and every value it can take is an edge.

LOADERS = {"import_module", "import_string"}


@functools.cache
def assignments(name: str) -> dict[str, list[ast.expr]]:
    """The values assigned to each plain name anywhere in module ``name``."""
    found: dict[str, list[ast.expr]] = {}
    for node in ast.walk(parsed(module_names()[name])):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                found.setdefault(target.id, []).append(value)
    return found


@functools.cache
def imported_names(name: str) -> dict[str, tuple[str, str]]:
    """``from module import x`` of module ``name``: x -> (the module, its name there)."""
    package = package_of(name)
    found = {}
    for node in ast.walk(parsed(module_names()[name])):
        if isinstance(node, ast.ImportFrom) and node.module:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, node.module]) if node.level else node.module
            for alias in node.names:
                found[alias.asname or alias.name] = (module, alias.name)
    return found


@functools.cache
def class_attributes() -> dict[str, list[tuple[str, ast.expr]]]:
    """Attribute -> (module, value) of every class attribute and property of the package."""
    found: dict[str, list[tuple[str, ast.expr]]] = {}
    for name, path in module_names().items():
        for cls in ast.walk(parsed(path)):
            if not isinstance(cls, ast.ClassDef):
                continue
            for statement in cls.body:
                if isinstance(statement, ast.Assign):
                    for target in statement.targets:
                        if isinstance(target, ast.Name):
                            found.setdefault(target.id, []).append((name, statement.value))
                elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                    if isinstance(statement.target, ast.Name):
                        found.setdefault(statement.target.id, []).append((name, statement.value))
                elif isinstance(statement, ast.FunctionDef) and statement.decorator_list:
                    for returned in ast.walk(statement):
                        if isinstance(returned, ast.Return) and returned.value is not None:
                            found.setdefault(statement.name, []).append((name, returned.value))
    return found


def strings(name: str, node: ast.expr, depth: int = 0) -> set[str]:
    """Every string ``node`` (in module ``name``) can be, as far as the source says."""
    if depth > 6:
        return set()
    again = functools.partial(strings, depth=depth + 1)
    if isinstance(node, ast.Constant):
        return {node.value} if isinstance(node.value, str) else set()
    if isinstance(node, ast.JoinedStr):
        texts = {""}
        for part in node.values:
            value = part.value if isinstance(part, ast.FormattedValue) else part
            options = again(name, value)
            if not options:
                return set()
            texts = {text + option for text in texts for option in options}
        return texts
    if isinstance(node, ast.Dict):
        return {text for value in node.values for text in again(name, value)}
    if isinstance(node, ast.Subscript):
        return again(name, node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "get":  # a dict's .get(...)
            return again(name, node.func.value)
        return set()
    if isinstance(node, ast.Name):
        if node.id == "__name__":
            return {name}
        if node.id == "__package__":
            return {package_of(name)}
        if node.id in assignments(name):
            return {text for value in assignments(name)[node.id] for text in again(name, value)}
        module, imported = imported_names(name).get(node.id, ("", ""))
        if module in module_names() and imported in assignments(module):
            return {
                text for value in assignments(module)[imported] for text in again(module, value)
            }
        return set()
    if isinstance(node, ast.Attribute):
        return {
            text
            for module, value in class_attributes().get(node.attr, [])
            for text in again(module, value)
        }
    return set()


@functools.cache
def string_imports(name: str) -> frozenset[str]:
    """The package's modules that module ``name`` imports by name."""
    known = module_names()
    found = set()
    for node in ast.walk(parsed(known[name])):
        if not (isinstance(node, ast.Call) and len(node.args) == 1):
            continue
        func = node.func
        loader = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if loader not in LOADERS:
            continue
        for text in strings(name, node.args[0]):
            # import_string("pkg.module.attr") imports pkg.module.
            module = text if loader == "import_module" else text.rpartition(".")[0]
            if module in known:
                found.add(module)
    return frozenset(found - {name})


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports (see :func:`imports_of`)."""
    return {module for module in imports_of(name, path) if module in known and module != name}


def graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imported_modules(name, path, set(modules)) for name, path in modules.items()}


def reached_from(prefixes: tuple[str, ...]) -> dict[str, set[str]]:
    """For each module under ``prefixes``: every module it imports, directly or through
    the package's modules it imports (the package's and others')."""
    modules = module_names()
    edges = graph()
    reached: dict[str, set[str]] = {}
    for start in modules:
        if not start.startswith(prefixes):
            continue
        seen, todo = {start}, [start]
        while todo:
            for imported in edges[todo.pop()]:
                if imported not in seen:
                    seen.add(imported)
                    todo.append(imported)
        reached[start] = {
            module for name in seen for module in imports_of(name, modules[name])
        } | seen
    return reached


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
    """Counting lazy imports and those under ``TYPE_CHECKING``: a circle hidden by either is
    still two modules that cannot be read one without the other."""
    edges = graph()
    # A parent package is imported before its modules: only the edges the code writes count.
    assert edges["indexnow_django.units.dispatch"], "the graph is empty: the parsing is broken"
    circle = find_circle(edges)
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_the_graph_counts_imports_by_name():
    """``import_module``/``import_string`` of an f-string of a constant and of a property
    that returns one of a dict of dotted paths: each is an edge."""
    edges = graph()
    assert "indexnow_django.transports.rq" in edges["indexnow_django.transports"]
    assert "indexnow_django.jobs" in edges["indexnow_django"]


CORE = ("indexnow_django.sending", "indexnow_django.protocol")
TRANSPORTS = ("rq", "django_rq", "django_tasks", "django.tasks", "indexnow_django.transports")


def test_the_delivery_core_and_the_protocol_know_no_transport():
    """The sending core and the engine protocol import no queue, no task framework and no
    transport, not even through another module of the package."""
    for module, imports in reached_from(CORE).items():
        wrong = sorted(
            name for name in imports if name.startswith(TRANSPORTS) or name.split(".")[0] == "rq"
        )
        assert not wrong, f"{module} imports {', '.join(wrong)}"
    for package in CORE:
        assert package in reached_from((package,)), f"{package} was not found"


def test_the_engine_protocol_imports_no_django():
    for module, imports in reached_from(("indexnow_django.protocol",)).items():
        wrong = sorted(name for name in imports if name.split(".")[0] == "django")
        assert not wrong, f"{module} imports {', '.join(wrong)}"
    script = (
        "import sys\n"
        "import indexnow_django.protocol.client, indexnow_django.protocol.normalize\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'rq')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[]"


#: Where the transports' own knowledge may live: the settings choose the transport (they read
#: ``DISPATCH``), the transports are it, the compat layer holds the internals they rely on.
KNOWS_TRANSPORTS = (
    "indexnow_django.conf",
    "indexnow_django.transports",
    "indexnow_django.compat",
)
#: The queue and task apps a transport uses.
TRANSPORT_APPS = ("rq", "django_rq", "django_tasks_db")


def outside_the_transports() -> dict[str, Path]:
    return {
        name: path for name, path in module_names().items() if not name.startswith(KNOWS_TRANSPORTS)
    }


def dispatch_comparisons(path: Path) -> list[str]:
    """Where ``path`` compares something named for the dispatch with a ``DISPATCH`` value
    (``conf.dispatch == "queue"``, ``mode in ("sync", "auto")``, ...)."""
    from indexnow_django.conf.declared import DISPATCH_MODES

    def named_dispatch(node: ast.expr) -> bool:
        return any(
            "dispatch" in (getattr(part, "attr", "") or getattr(part, "id", "")).lower()
            for part in ast.walk(node)
            if isinstance(part, (ast.Attribute, ast.Name))
        )

    def a_mode(node: ast.expr) -> bool:
        values = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return any(isinstance(v, ast.Constant) and v.value in DISPATCH_MODES for v in values)

    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(map(named_dispatch, operands)) and any(map(a_mode, operands)):
                found.append(f"{path.name}:{node.lineno}")
    return found


def test_only_the_settings_and_the_transports_tell_the_dispatch_values_apart():
    """Every consumer asks the chosen transport (``indexnow_django.transports.chosen``):
    none compares ``DISPATCH`` with one of its values."""
    found = [
        where for path in outside_the_transports().values() for where in dispatch_comparisons(path)
    ]
    assert found == []
    # The check sees what it looks for.
    assert dispatch_comparisons(PACKAGE / "transports" / "tasks" / "__init__.py")


def test_only_the_transports_import_the_queue_and_task_apps():
    """rq, django-rq and django-tasks-db are the transports' business (and the compat
    layer's): the rest of the package asks the transport."""
    wrong = {
        name: sorted(i for i in imports_of(name, path) if i.split(".")[0] in TRANSPORT_APPS)
        for name, path in outside_the_transports().items()
    }
    assert {name: found for name, found in wrong.items() if found} == {}
    assert any(
        i.split(".")[0] == "rq"
        for i in imports_of(
            "indexnow_django.transports.rq.queue", PACKAGE / "transports" / "rq" / "queue.py"
        )
    )


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


def stable_paths() -> dict[str, str]:
    """CONTRIBUTING.md's stable dotted paths: path -> who stores or imports it."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    block = text.split("<!-- stable-paths -->\n```text\n", 1)[1].split("```", 1)[0]
    paths, said = {}, ""
    for line in block.splitlines():
        path, _, who = line.partition(" ")
        said = who.strip() or said
        paths[path] = said
    return paths


def resolve(path: str) -> object:
    """What a dotted path names, as rq's workers, the task backends and Django's
    ``import_string`` look it up: the longest importable module, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ModuleNotFoundError(path)


def test_the_stable_dotted_paths_import_and_resolve():
    """What Redis, the task backends' rows and the settings name, and what users import,
    wherever the code under it lives."""
    paths = stable_paths()
    assert len(paths) > 30 and "indexnow_django.jobs.publish" in paths
    for path, who in paths.items():
        if who.startswith("task backends"):  # bound to the backend the settings name
            module, _, name = path.rpartition(".")
            assert name in importlib.import_module(module).FUNCTIONS, path
            continue
        found = resolve(path)
        assert found is not None, path
        if who.startswith(("rq", "task backends")):
            assert callable(found), f"{path} ({who}) is not callable"
    from indexnow_django.units.scheduling import publish

    assert resolve("indexnow_django.jobs.publish") is publish
    assert resolve("indexnow_django.scheduling.publish") is publish
