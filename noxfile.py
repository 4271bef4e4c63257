"""Sessions: tests (Python x Django matrix), tests_rq3, lint, typecheck, docs."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck", "docs"]
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


@nox.session(python="3.12")
def tests_rq3(session: nox.Session) -> None:
    session.install("-e", ".[test]", "rq>=3,<4")
    session.run("python", "-m", "pytest", *session.posargs)


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
