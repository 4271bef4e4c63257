"""Sessions: tests (Python x Django matrix), fast, tests_rq3, tests_postgres, wagtail,
djangocms, lint, typecheck, docs."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "wagtail", "djangocms", "lint", "typecheck", "docs"]
nox.options.reuse_existing_virtualenvs = True

# Django 6.x needs Python 3.12+.
MATRIX = [
    (python, django)
    for python in ("3.10", "3.11", "3.12", "3.13")
    for django in ("5.2", "6.0", "6.1")
    if django == "5.2" or python in ("3.12", "3.13")
]


@nox.session
@nox.parametrize(("python", "django"), MATRIX)
def tests(session: nox.Session, django: str) -> None:
    session.install("-e", ".[test]", f"django~={django}.0", "rq>=2.12,<3")
    session.run("python", "-m", "pytest", *session.posargs)


#: The tests that start no rq worker and take no seconds of their own: two to three minutes.
FAST = ["-m", "not worker and not slow"]


@nox.session(python="3.12")
def fast(session: nox.Session) -> None:
    """The fast lane: ``nox -s fast`` (``-- tests/test_client.py`` for one module)."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", *FAST, *session.posargs)


@nox.session(python="3.12")
def tests_rq3(session: nox.Session) -> None:
    session.install("-e", ".[test]", "rq>=3,<4")
    session.run("python", "-m", "pytest", *session.posargs)


# The Wagtail integration on the oldest supported Wagtail (7.0 LTS, Django 5.2)
# and the newest (8.0, with the newest Django).
WAGTAIL = [("7.0", "5.2"), ("8.0", "6.1")]


@nox.session(python="3.12")
@nox.parametrize(("wagtail", "django"), WAGTAIL)
def wagtail(session: nox.Session, wagtail: str, django: str) -> None:
    session.install("-e", ".[test]", f"wagtail~={wagtail}.0", f"django~={django}.0")
    session.run(
        "python",
        "-m",
        "pytest",
        "tests/wagtail_site",
        "--ds",
        "tests.wagtail_site.settings",
        *session.posargs,
    )


# The django CMS integration (django CMS 5.1, djangocms-versioning 2.8) on the
# oldest and the newest Django.
DJANGOCMS = ["5.2", "6.1"]


@nox.session(python="3.12")
@nox.parametrize("django", DJANGOCMS)
def djangocms(session: nox.Session, django: str) -> None:
    session.install("-e", ".[test]", f"django~={django}.0")
    session.run(
        "python",
        "-m",
        "pytest",
        "tests/djangocms_site",
        "--ds",
        "tests.djangocms_site.settings",
        *session.posargs,
    )


@nox.session(python="3.12")
def tests_postgres(session: nox.Session) -> None:
    """Change tracking, units of work, bulk changes and django-tasks-db's worker on PostgreSQL
    (127.0.0.1:5432, trust)."""
    session.install("-e", ".[test]", "psycopg[binary]>=3.1")
    session.env["INDEXNOW_TEST_DATABASE"] = "postgres"
    files = [
        "tests/test_tracking.py",
        "tests/test_collector.py",
        "tests/test_queryset.py",
        "tests/test_tasks.py",
    ]
    session.run("python", "-m", "pytest", *(session.posargs or files))


@nox.session(python="3.12")
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python="3.12")
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".[test,lint]")
    session.run("mypy")


@nox.session(python="3.12")
def docs(session: nox.Session) -> None:
    session.install("-e", ".[docs]")
    session.run("mkdocs", "build", "--strict")
