"""Stories (django-modeltranslation), articles (django-parler), an admin client, helpers."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from django.test import Client

from indexnow_django.testing import LoopbackEngine
from tests.i18n_site.blog.models import Article, Story
from tests.services import run_django

__all__ = ["_i18n_db", "admin"]

W = "https://www.example.com"
LANGUAGES = ("en", "fr", "de")


@pytest.fixture(autouse=True)
def _i18n_db(transactional_db: Any) -> None:
    """The tests commit (URLs are collected when a transaction commits)."""


@pytest.fixture
def admin(django_user_model: Any) -> Client:
    """A client logged in to the admin as a superuser."""
    user = django_user_model.objects.create_superuser("editor", "editor@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


def speaking(client: Client, language: str) -> Client:
    """``client`` with ``language`` active in its requests (the language cookie)."""
    client.cookies["django_language"] = language
    return client


def story(status: str = "published", *, languages: tuple[str, ...] = LANGUAGES, **fields: Any):
    """A story written in ``languages`` (title, slug ``<name>-<language>``), saved by code."""
    name = fields.pop("name", "a0")
    values: dict[str, Any] = {"status": status}
    for language in languages:
        values[f"title_{language}"] = f"{name} {language}"
        values[f"slug_{language}"] = f"{name}-{language}"
        values[f"body_{language}"] = f"text {language}"
    values.update(fields)
    return Story.objects.create(**values)


def article(status: str = "published", languages: tuple[str, ...] = ("en", "fr")) -> Article:
    """An article translated into ``languages`` (slug ``b0-<language>``), saved by code."""
    obj = Article(status=status)
    for language in languages:
        obj.set_current_language(language)
        obj.title = f"b0 {language}"
        obj.slug = f"b0-{language}"
    obj.save()
    return Article.objects.get(pk=obj.pk)


def story_urls(name: str, languages: tuple[str, ...] = LANGUAGES) -> list[str]:
    return sorted(f"{W}/{language}/story/{name}-{language}/" for language in languages)


def story_form(obj: Story, **changes: Any) -> dict[str, Any]:
    """The admin's change form of ``obj`` as it would post it, with ``changes``."""
    data: dict[str, Any] = {"status": obj.status, "published_at_0": "", "published_at_1": ""}
    for language in LANGUAGES:
        for field in ("title", "slug", "body"):
            name = f"{field}_{language}"
            data[name] = getattr(obj, name) or ""
    data.update(changes)
    return data


def posted(engine: LoopbackEngine) -> list[str]:
    """Every URL the engine received, sorted."""
    return sorted(engine.posted_urls())


def run_manage(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """``python -m django <args>`` with the multilingual site's settings, as cron runs it."""
    return run_django(*args, settings="tests.i18n_site.settings", **variables)
