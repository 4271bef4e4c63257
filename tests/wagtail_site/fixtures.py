"""A page tree on one Wagtail site, an admin client, and helpers to act like an editor."""

from __future__ import annotations

import datetime
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from wagtail.models import Locale, Page, Site

from indexnow_django.testing import LoopbackEngine
from tests.services import run_django
from tests.wagtail_site.pages.models import ArticlePage, HomePage, SectionPage

ROOT = Path(__file__).resolve().parent.parent.parent

__all__ = ["_wagtail_db", "admin", "tree"]


@dataclass
class Tree:
    """``/`` (home) → ``/news/`` (section) → ``/news/first/``, ``/news/second/``."""

    root: Page
    home: HomePage
    news: SectionPage
    first: ArticlePage
    second: ArticlePage
    site: Site

    def reload(self) -> Tree:
        for name in ("home", "news", "first", "second"):
            page = getattr(self, name)
            setattr(self, name, type(page).objects.get(pk=page.pk))
        return self


def add(parent: Page, cls: type[Page], title: str, slug: str, **fields: Any) -> Any:
    """A live page created by code (the way fixtures and imports make pages)."""
    page = cls(title=title, slug=slug, **fields)
    parent.add_child(instance=page)
    page.save_revision().publish()
    return cls.objects.get(pk=page.pk)


@pytest.fixture(autouse=True)
def _wagtail_db(transactional_db: Any) -> None:
    """Wagtail tests commit (URLs are collected when a transaction commits)."""


@pytest.fixture
def tree(engine: LoopbackEngine) -> Iterator[Tree]:
    Locale.objects.get_or_create(language_code="en")
    # Wagtail's migrations made a site on localhost with a welcome page: not ours.
    Site.objects.all().delete()
    Page.objects.filter(depth__gt=1).delete()
    root = Page.objects.filter(depth=1).first() or Page.add_root(
        instance=Page(title="Root", slug="root", live=True)
    )
    home = HomePage(title="Home", slug="home")
    root.add_child(instance=home)
    site = Site.objects.create(
        hostname="www.example.com", port=443, root_page=home, is_default_site=True
    )
    news = add(home, SectionPage, "News", "news")
    first = add(news, ArticlePage, "First", "first")
    second = add(news, ArticlePage, "Second", "second")
    engine.reset()  # what building the tree submitted is not the tests' business
    yield Tree(root, HomePage.objects.get(pk=home.pk), news, first, second, site)
    Site.clear_site_root_paths_cache()


@pytest.fixture
def admin(django_user_model: Any) -> Client:
    """A client logged in to Wagtail's admin as a superuser."""
    user = django_user_model.objects.create_superuser("editor", "editor@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


def form(page: Page, **changes: Any) -> dict[str, Any]:
    """The edit form of ``page`` as the admin would post it, with ``changes``."""
    data: dict[str, Any] = {
        "title": page.title,
        "slug": page.slug,
        "seo_title": "",
        "search_description": "",
        "go_live_at": "",
        "expire_at": "",
    }
    for field in ("body", "intro"):
        if hasattr(page, field):
            data[field] = getattr(page, field)
    for name, value in changes.items():
        if isinstance(value, datetime.datetime):
            value = timezone.localtime(value).strftime("%Y-%m-%d %H:%M")
        data[name] = value
    return data


def publish_data(page: Page, **changes: Any) -> dict[str, Any]:
    return {**form(page, **changes), "action-publish": "action-publish"}


def edit_url(page: Page) -> str:
    return reverse("wagtailadmin_pages:edit", args=[page.pk])


def posted(engine: LoopbackEngine) -> list[str]:
    """Every URL the engine received, sorted (each POST's order is not the point)."""
    return sorted(engine.posted_urls())


def run_manage(*args: str, **overrides: str) -> subprocess.CompletedProcess[str]:
    """``python -m django <args>`` with the Wagtail settings, as a site's cron would run it."""
    return run_django(*args, settings="tests.wagtail_site.settings", **overrides)
