"""Two django CMS sites with their page trees, an admin client, and helpers to act
like an editor (through the admin) or like code (through the API)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cms.api import create_page, create_page_content
from cms.models import Page, PageContent
from django.apps import apps
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.contenttypes.models import ContentType
from django.contrib.sites.models import Site
from django.db import transaction
from django.test import Client
from django.urls import reverse
from djangocms_versioning.constants import DRAFT, PUBLISHED
from djangocms_versioning.models import Version

from indexnow_django.testing import LoopbackEngine
from tests.services import run_django

ROOT = Path(__file__).resolve().parent.parent.parent

__all__ = ["_cms_db", "admin", "editor", "tree"]

W = "https://www.example.com"
BLOG = "https://blog.example.org"


def content(page: Page, language: str = "en", state: str | None = None) -> PageContent:
    """The page's content in ``language`` (the newest version's, or the one in ``state``)."""
    versions = Version.objects.filter(
        content_type__model="pagecontent",
        object_id__in=PageContent.admin_manager.filter(page=page, language=language).values("pk"),
    )
    if state is not None:
        versions = versions.filter(state=state)
    found: PageContent = versions.latest("pk").content
    return found


def version(page: Page, language: str = "en", state: str = DRAFT) -> Version:
    return Version.objects.get_for_content(content(page, language, state))


def publish(page: Page, user: AbstractBaseUser, language: str = "en") -> None:
    """Publish the page's draft in ``language`` through the API."""
    version(page, language, DRAFT).publish(user)


def draft(page: Page, user: AbstractBaseUser, language: str = "en", **changes: Any) -> PageContent:
    """A new draft of the published content, with ``changes`` (a slug, say), through the API."""
    new = version(page, language, PUBLISHED).copy(user)
    page_content: PageContent = new.content
    for name, value in changes.items():
        setattr(page_content, name, value)
    page_content.save()
    return page_content


def add(
    user: AbstractBaseUser,
    title: str,
    slug: str,
    parent: Page | None = None,
    site: Site | None = None,
    *,
    live: bool = True,
) -> Page:
    """A page created by code, in English, published unless ``live`` is false."""
    page = create_page(
        title, "page.html", "en", slug=slug, parent=parent, site=site, created_by=user
    )
    if live:
        publish(page, user)
    return Page.objects.get(pk=page.pk)


def translate(
    page: Page, user: AbstractBaseUser, title: str, slug: str, *, live: bool = True
) -> None:
    """The page's German content, created by code, published unless ``live`` is false."""
    create_page_content("de", title, page, slug=slug, created_by=user)
    if live:
        publish(page, user, "de")


@dataclass
class Tree:
    """Site 1 (www.example.com): home ``/`` → ``/about/`` → ``/about/team/``, and ``/news/``;
    site 2 (blog.example.org): its home ``/`` → ``/post/``. English and German (``/de/``)
    for home, about and team on site 1."""

    home: Page
    about: Page
    team: Page
    news: Page
    blog_home: Page
    post: Page
    site: Site
    blog: Site
    user: Any

    def reload(self) -> Tree:
        for name in ("home", "about", "team", "news", "blog_home", "post"):
            setattr(self, name, Page.objects.get(pk=getattr(self, name).pk))
        return self


@pytest.fixture(autouse=True)
def _cms_db(transactional_db: Any) -> None:
    """django CMS tests commit (URLs are collected when a transaction commits).

    Each test's database gets its content types anew, with new primary keys:
    djangocms-versioning's versionables keep the old ones, so they forget them.
    """
    ContentType.objects.clear_cache()
    for versionable in apps.get_app_config("djangocms_versioning").cms_extension.versionables:
        versionable.__dict__.pop("content_types", None)


@pytest.fixture
def editor(django_user_model: Any) -> Any:
    return django_user_model.objects.create_superuser("editor", "editor@example.com", "pw")


@pytest.fixture
def tree(engine: LoopbackEngine, editor: Any) -> Iterator[Tree]:
    site = Site.objects.get(pk=1)
    site.domain, site.name = "www.example.com", "Example"
    site.save()
    # A second site (its primary key from the database's sequence: PostgreSQL's does
    # not move for rows created with theirs).
    blog = Site.objects.create(domain="blog.example.org", name="Blog")
    home = add(editor, "Home", "home", site=site, live=False)
    with transaction.atomic():
        home.set_as_homepage(editor)
    publish(home, editor)
    about = add(editor, "About", "about", home)
    team = add(editor, "Team", "team", about)
    news = add(editor, "News", "news", home)
    translate(home, editor, "Startseite", "startseite")
    translate(about, editor, "Über uns", "ueber-uns")
    translate(team, editor, "Team", "mannschaft")
    blog_home = add(editor, "Blog", "blog", site=blog, live=False)
    with transaction.atomic():
        blog_home.set_as_homepage(editor)
    publish(blog_home, editor)
    post = add(editor, "Post", "post", blog_home)
    engine.reset()  # what building the tree submitted is not the tests' business
    yield Tree(home, about, team, news, blog_home, post, site, blog, editor).reload()


@pytest.fixture
def admin(editor: Any) -> Client:
    """A client logged in to django CMS's admin as a superuser."""
    client = Client()
    client.force_login(editor)
    return client


def version_url(action: str, version: Version) -> str:
    return reverse(f"admin:djangocms_versioning_pagecontentversion_{action}", args=[version.pk])


def posted(engine: LoopbackEngine) -> list[str]:
    """Every URL the engine received, sorted (each POST's order is not the point)."""
    return sorted(engine.posted_urls())


def run_manage(*args: str, **overrides: str) -> subprocess.CompletedProcess[str]:
    """``python -m django <args>`` with the django CMS settings, as a site's cron would run it."""
    return run_django(*args, settings="tests.djangocms_site.settings", **overrides)


# The admin, as an editor uses it ------------------------------------------------------


def edit(admin: Client, page: Page, language: str = "en", **changes: Any) -> PageContent:
    """A draft of the page through the admin: "Edit" on the published version (which
    makes a new draft of it), then the page settings form with ``changes``."""
    published = Version.objects.filter(
        content_type__model="pagecontent",
        object_id__in=PageContent.admin_manager.filter(page=page, language=language).values("pk"),
        state__in=[DRAFT, PUBLISHED],
    ).latest("pk")
    if published.state == PUBLISHED:
        response = admin.post(version_url("edit_redirect", published), {})
        assert response.status_code == 302, response.content[:500]
    page_content = content(page, language, DRAFT)
    url = reverse("admin:cms_pagecontent_change", args=[page_content.pk])
    form = admin.get(url).context["adminform"].form
    data = {
        name: "" if value is None else value
        for name, value in form.initial.items()
        if name in form.fields and value not in (False, None)
    }
    data.update(changes)
    response = admin.post(f"{url}?language={language}", data)
    assert response.status_code == 302, response.content[:1000]
    return content(page, language, DRAFT)


def admin_publish(admin: Client, page: Page, language: str = "en") -> Any:
    """ "Publish" on the page's draft in ``language``, in the admin."""
    response = admin.post(version_url("publish", version(page, language, DRAFT)), {})
    assert response.status_code == 302, response.content[:500]
    return response


def admin_unpublish(admin: Client, page: Page, language: str = "en") -> None:
    """ "Unpublish" on the page's published version in ``language``, confirmed, in the admin."""
    response = admin.post(version_url("unpublish", version(page, language, PUBLISHED)), {})
    assert response.status_code == 302, response.content[:500]


def admin_add(admin: Client, parent: Page, title: str, slug: str, language: str = "en") -> Page:
    """A new page (a draft) under ``parent``, through the admin's "New page" form."""
    url = reverse("admin:cms_pagecontent_add") + f"?parent_node={parent.pk}&language={language}"
    response = admin.post(url, {"title": title, "slug": slug, "parent_page": parent.pk})
    assert response.status_code == 302, response.content[:1000]
    page: Page = PageContent.admin_manager.get(slug=slug, language=language).page
    return page
