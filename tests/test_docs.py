"""The documentation keeps up with the code: settings, check ids, commands, pages."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import BaseCommand, load_command_class

from indexnow_django import conf
from tests.services import run_django

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PACKAGE = ROOT / "indexnow_django"


def literal(value: Any) -> str:
    """A default as the configuration page writes it (Python, with double quotes)."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f'"{k}": {literal(v)}' for k, v in value.items()) + "}"
    return repr(value)


def sections(markdown: str, level: str = "##") -> dict[str, str]:
    """``{heading text: body}`` of the headings of one level."""
    parts = re.split(rf"^{level} (.+)$", markdown, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


CONFIGURATION = sections((DOCS / "configuration.md").read_text())


@pytest.mark.parametrize("name", list(conf.DEFAULTS))
def test_every_setting_has_a_section_with_its_default(name):
    body = CONFIGURATION.get(f"`{name}`")
    assert body is not None, f"docs/configuration.md has no '## `{name}`' section"
    assert f"Default: `{literal(conf.DEFAULTS[name])}`" in body
    assert "*Why" in body, f"docs/configuration.md, section {name}: say why the default"


@pytest.mark.parametrize(
    ("name", "sub"),
    [(n, s) for n, d in conf.DEFAULTS.items() if isinstance(d, dict) for s in d],
)
def test_every_nested_setting_has_a_row_with_its_default(name, sub):
    body = CONFIGURATION[f"`{name}`"]
    row = f"| `{sub}` | `{literal(conf.DEFAULTS[name][sub])}` |"
    assert row in body, f"docs/configuration.md, section {name}: no row {row!r}"
    line = next(line for line in body.splitlines() if line.startswith(row))
    assert "*Why" in line, f"{name}[{sub!r}]: say why the default"


def check_ids_in_code() -> set[str]:
    ids: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        ids.update(re.findall(r"indexnow\.[EW]\d{3}", path.read_text()))
    return ids


def test_the_checks_page_lists_exactly_the_check_ids_of_the_code():
    documented = set(
        re.findall(r"^\| `(indexnow\.[EW]\d{3})` \|", (DOCS / "checks.md").read_text(), re.M)
    )
    in_code = check_ids_in_code()
    assert in_code, "no check id found in the package"
    assert in_code - documented == set(), "check ids missing from docs/checks.md"
    assert documented - in_code == set(), "docs/checks.md lists ids the code does not have"


def command_names() -> list[str]:
    return sorted(
        p.stem
        for p in (PACKAGE / "management" / "commands").glob("*.py")
        if not p.stem.startswith("_")
    )


def own_options(name: str) -> set[str]:
    """The long options a command adds to those every Django command has."""
    common = {
        s for a in BaseCommand().create_parser("manage.py", "x")._actions for s in a.option_strings
    }
    command = load_command_class("indexnow_django", name)
    parser = command.create_parser("manage.py", name)
    return {
        s
        for a in parser._actions
        for s in a.option_strings
        if s.startswith("--") and s not in common
    }


@pytest.mark.parametrize("name", command_names())
def test_every_command_and_option_is_documented(name):
    body = sections((DOCS / "commands.md").read_text()).get(f"`{name}`")
    assert body is not None, f"docs/commands.md has no '## `{name}`' section"
    missing = sorted(o for o in own_options(name) if f"`{o}" not in body)
    assert missing == [], f"{name}: options missing from docs/commands.md"


def test_every_page_is_in_the_navigation_and_every_entry_exists():
    mkdocs = (ROOT / "mkdocs.yml").read_text()
    nav = mkdocs[mkdocs.index("\nnav:") :]
    listed = set(re.findall(r":\s*([\w./-]+\.md)\s*$", nav, re.M))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages - listed == set(), "pages missing from the nav of mkdocs.yml"
    assert listed - pages == set(), "nav entries of mkdocs.yml without a page"


def test_relative_links_between_pages_point_to_existing_pages():
    broken = []
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", page.read_text()):
            if not (page.parent / target).exists():
                broken.append(f"{page.name} -> {target}")
    assert broken == []


def code_blocks(markdown: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", markdown, flags=re.M | re.S)


def settings_of(block: str) -> dict[str, Any]:
    """The settings a ``# settings.py`` block defines (``...`` stands for the user's own)."""
    source = block.split("# urls.py")[0]
    namespace: dict[str, Any] = {}
    exec(compile(source, "<docs>", "exec"), namespace)
    return {k: v for k, v in namespace.items() if k.isupper()}


def wire_up_settings(markdown: str) -> dict[str, Any]:
    block = next(b for b in code_blocks(markdown, "python") if "INSTALLED_APPS" in b)
    return settings_of(block)


@pytest.mark.parametrize("page", ["README.md", "docs/quickstart.md"])
def test_the_wire_up_passes_the_system_checks(page, settings):
    """Copied as they stand, the settings a reader is given raise no IndexNow check."""
    from django.core import checks

    given = wire_up_settings((ROOT / page).read_text())
    key = str(given["INDEXNOW"]["KEY"])
    # "<output of manage.py indexnow_key>", or an example key that the reader replaces:
    # test_a_key_copied_from_the_docs_is_refused checks that it is.
    if key.startswith("<") or key in conf.DOCUMENTED_KEYS:
        given["INDEXNOW"]["KEY"] = "0123456789abcdef0123456789abcdef"
    assert "CACHES" in given, f"{page}: the wire-up leaves out CACHES"
    for name in ("CACHES", "RQ_QUEUES", "RQ", "INDEXNOW"):
        if name in given:
            setattr(settings, name, given[name])
    found = [m.id for m in checks.run_checks(tags=["indexnow"])]
    assert found == [], f"{page}: its wire-up gives {found}"


#: A key in the pages: the value of a "KEY" (also per host), a "key" in a POST body, a
#: key= in a log line, the name of a key file.
DOCS_KEY_RE = re.compile(
    r"""["']KEY["']:\s*["']([^"'<]+)["']|"key":\s*"([^"]+)"|\bkey=([A-Za-z0-9-]{8,128})\b"""
    r"|/([A-Za-z0-9-]*[0-9][A-Za-z0-9-]*)\.txt\b"
)


def keys_in_the_docs() -> set[str]:
    found: set[str] = set()
    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        for match in DOCS_KEY_RE.finditer(page.read_text()):
            value = next(group for group in match.groups() if group)
            if conf.KEY_RE.match(value):
                found.add(value)
    return found


def test_every_key_printed_in_the_docs_is_refused_by_the_checks():
    found = keys_in_the_docs()
    assert "0f5c1b2d3e4a5968778695a4b3c2d1e0" in found  # the quickstart's
    assert found - conf.DOCUMENTED_KEYS == set(), "add these to conf.DOCUMENTED_KEYS"


def test_a_key_copied_from_the_docs_is_refused(settings):
    from django.core import checks

    given = wire_up_settings((DOCS / "quickstart.md").read_text())
    for name in ("CACHES", "RQ_QUEUES", "RQ", "INDEXNOW"):
        setattr(settings, name, given[name])
    found = [m.id for m in checks.run_checks(tags=["indexnow"])]
    assert found == ["indexnow.E020"]


def test_the_quickstart_installs_the_app_before_running_its_commands():
    quickstart = (DOCS / "quickstart.md").read_text()
    installed = re.search(r'INSTALLED_APPS = \[[^\]]*"indexnow_django"', quickstart)
    assert installed is not None
    for command in re.finditer(r"manage\.py (indexnow_\w+)", quickstart):
        assert command.start() > installed.start(), (
            f"the quickstart runs {command.group(1)} before INSTALLED_APPS has the app"
        )


def test_the_quickstart_shows_logging_before_it_sends_readers_to_the_log():
    quickstart = (DOCS / "quickstart.md").read_text()
    assert quickstart.index("LOGGING = {") < quickstart.index("dry run")


def test_indexnow_key_runs_with_the_app_installed_and_no_settings_yet(tmp_path):
    """Step 3 of the quickstart: the key is made before INDEXNOW exists."""
    (tmp_path / "quick_settings.py").write_text(
        "SECRET_KEY = 'x'\n"
        "INSTALLED_APPS = ['django.contrib.contenttypes', 'django.contrib.auth',"
        " 'django_rq', 'indexnow_django']\n"
        "DATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3', 'NAME': ':memory:'}}\n"
    )
    result = run_django("indexnow_key", settings="quick_settings", path=(tmp_path,))
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"[0-9a-f]{32}\n", result.stdout)


QUICKSTART = (DOCS / "quickstart.md").read_text()


def test_the_quickstart_creates_the_tables_before_the_worker_runs():
    assert "python manage.py migrate" in QUICKSTART
    assert QUICKSTART.index("manage.py migrate") < QUICKSTART.index("manage.py rqworker")


def test_the_quickstart_registration_imports_only_what_it_uses():
    """Step 4 copied into an app with just a Post model must import."""
    block = next(b for b in code_blocks(QUICKSTART, "python") if "# blog/indexnow.py" in b)
    imported = re.search(r"from \.models import (.+)", block).group(1)
    names = [name.strip() for name in imported.split(",")]
    assert names == ["Post"]
    for name in names:
        assert f"register({name})" in block


def test_the_quickstart_is_a_dry_run_until_it_says_to_go_live():
    """Nothing can send before the reader has watched a dry run; every settings change
    restarts the workers too."""
    assert wire_up_settings(QUICKSTART)["INDEXNOW"]["DRY_RUN"] is True
    steps = sections(QUICKSTART)
    worker = next(body for title, body in steps.items() if "Run a worker" in title)
    assert "restart the workers" in worker
    live = list(steps)[-1]
    assert "go live" in live
    assert "restart the web processes and the workers" in steps[live]


def test_the_quickstart_says_that_an_accepted_url_is_not_sent_again_for_10_minutes():
    assert conf.DEFAULTS["DEBOUNCE"]["TTL"] == 600
    assert "not sent to it again for 10 minutes" in QUICKSTART
    assert "--force" in QUICKSTART


def test_the_quickstart_shows_the_log_lines_of_a_dry_run_as_the_code_writes_them():
    formats = set()
    for path in PACKAGE.rglob("*.py"):
        formats.update(re.findall(r'"(IndexNow [^"]*%[sd][^"]*)"', path.read_text()))
    patterns = [
        re.compile(re.sub(r"%[sd]", r"\\S*", re.escape(f).replace("%%", "%"))) for f in formats
    ]
    [block] = [b for b in code_blocks(QUICKSTART, "text") if "dry run" in b]
    for line in block.strip().splitlines():
        assert any(p.fullmatch(line) for p in patterns), f"no log format gives {line!r}"


def test_the_quickstart_starts_the_worker_after_its_logging():
    """The worker reads LOGGING when it starts: the lines of the dry run need it first."""
    assert QUICKSTART.index("LOGGING = {") < QUICKSTART.index("manage.py rqworker")


def test_the_quickstart_checks_offline_until_the_site_is_deployed():
    """BASE_URL www.example.com serves no key file for a reader's laptop."""
    commands = re.findall(r"^python manage\.py indexnow_check.*$", QUICKSTART, re.M)
    assert commands == ["python manage.py indexnow_check --offline"]


def test_the_quickstart_installs_from_a_clone_too():
    assert "python -m pip install -e ./indexnow-django" in QUICKSTART


def test_the_debounce_line_the_quickstart_shows_is_the_one_logged(caplog, indexnow_settings):
    """What step 9 tells readers to look for, not a job result that rq does not keep."""
    from indexnow_django.sending.send import deliver_now

    shown = re.search(r"^IndexNow debounced batch=\w+ engine=indexnow count=1$", QUICKSTART, re.M)
    assert shown is not None
    indexnow_settings(DEBOUNCE={"CACHE": "shared", "TTL": 600})
    deliver_now(["/a/"])
    with caplog.at_level("INFO", logger="indexnow_django"):
        deliver_now(["/a/"])
    logged = [r.getMessage() for r in caplog.records if "debounced" in r.getMessage()]
    assert [re.sub(r"batch=\S+|engine=\S+", "", line) for line in logged] == [
        re.sub(r"batch=\S+|engine=\S+", "", shown.group(0))
    ]


def test_db_worker_is_run_without_the_autoreloader_in_the_no_redis_recipe():
    tasks = (DOCS / "tasks.md").read_text()
    assert "python manage.py db_worker --no-reload" in tasks


# --------------------------------------------------------------------------- quoted output


def log_formats() -> list[str]:
    """Every ``IndexNow ...`` log format of the package, its %-style arguments in place
    (adjacent string literals of one call joined)."""
    import ast

    formats = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and node.args[0].value.startswith("IndexNow ")
                and "%" in node.args[0].value
            ):
                formats.append(node.args[0].value)
    return formats


#: Where a quoted line or a log format holds anything (a wildcard of a glob).
ANY = "\x00"


def log_glob(log_format: str) -> str:
    """A log format with each of its %-style arguments as :data:`ANY`."""
    return re.sub(r"%[-\d.]*[sdfr]", ANY, log_format).replace("%%", "%")


def quoted_glob(line: str) -> str:
    """A line the docs quote, each ``...`` (what the reader's own line holds there) as
    :data:`ANY`."""
    return line.replace("...", ANY).replace("…", ANY)


def globs_meet(first: str, second: str) -> bool:
    """Whether some text matches both globs (:data:`ANY` for any characters)."""
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    while todo:
        i, j = todo.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(first) and j == len(second):
            return True
        a = first[i] if i < len(first) else None
        b = second[j] if j < len(second) else None
        if a == ANY:
            todo.append((i + 1, j))  # it holds nothing more
            if b is not None:
                todo.append((i, j + 1))  # it holds the other's next character
        if b == ANY:
            todo.append((i, j + 1))
            if a is not None:
                todo.append((i + 1, j))
        if a is not None and a == b and a != ANY:
            todo.append((i + 1, j + 1))
    return False


def quoted_log_lines() -> list[tuple[str, str]]:
    """``(page, line)`` for each log line the docs quote: a line of a code block, or an
    inline quote, that starts with ``IndexNow `` and a lower-case word. ``...`` in one
    stands for what the reader's own line holds there."""
    found = []
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text()
        lines = re.findall(r"^(IndexNow [a-z][^\n`]*)$", text, re.M)
        lines += re.findall(r"`(IndexNow [a-z][^`]*)`", text)
        # A log line has fields (key=value); a command's own output has none.
        found.extend((path.name, " ".join(line.split())) for line in lines if "=" in line)
    return found


def written_by_the_code(line: str, globs: list[str]) -> bool:
    quoted = quoted_glob(line)
    return any(globs_meet(quoted, glob) for glob in globs)


def test_every_log_line_the_docs_quote_is_one_the_code_writes():
    globs = [log_glob(f) for f in log_formats()]
    assert len(globs) > 20, "no log format found in the package"
    quoted = quoted_log_lines()
    assert len(quoted) > 10, "no log line found in docs/"
    stale = [f"{page}: {line}" for page, line in quoted if not written_by_the_code(line, globs)]
    assert stale == [], "log lines in docs/ that no format of the code gives:\n" + "\n".join(stale)


def fields_of(line: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S*)", line))


@pytest.mark.django_db
def test_the_flush_lines_the_docs_quote_are_those_of_the_shipped_defaults(caplog, redis_conn):
    """A flush through the queue logs one line; the docs quote it as the shipped defaults
    write it (its mode, its fields), wherever they show the queue's flush."""
    from indexnow_django.units.dispatch import dispatch

    with caplog.at_level("INFO", logger="indexnow_django"):
        dispatch(["/a/", "/b/"])
    [logged] = [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("IndexNow flush")
    ]
    written = fields_of(logged)
    quoted = [
        (page, line)
        for page, line in quoted_log_lines()
        if line.startswith("IndexNow flush")
        and fields_of(line).get("mode") in ("queue", "coalesce")
    ]
    assert quoted, "the docs quote no flush through the queue"
    for page, line in quoted:
        shown = fields_of(line)
        assert shown["mode"] == written["mode"], f"{page}: {line} (the code: {logged})"
        if not line.endswith("..."):
            assert list(shown) == list(written), f"{page}: {line} (the code: {logged})"
