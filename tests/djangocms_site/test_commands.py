"""``indexnow_explain`` and ``indexnow_submit --model`` on django CMS pages."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from cms.models import Page
from django.core.management import CommandError, call_command

from tests.djangocms_site.fixtures import (
    BLOG,
    Tree,
    W,
    admin_add,
    admin_unpublish,
    content,
    draft,
    posted,
)


def explain(label: str, pk: Any) -> dict[str, Any]:
    out = StringIO()
    call_command("indexnow_explain", label, str(pk), "--json", stdout=out)
    document: dict[str, Any] = json.loads(out.getvalue())
    return document


def test_explain_a_page_in_every_language(tree: Tree, engine) -> None:
    report = explain("cms.Page", tree.team.pk)

    assert report["covered_by"] == {
        "kind": "djangocms",
        "name": "django CMS",
        "integration": "indexnow_django.contrib.djangocms",
    }
    assert report["public"] is True
    assert [(u["language"], u["url"], u["allowed"]) for u in report["urls"]] == [
        ("en", f"{W}/about/team/", True),
        ("de", f"{W}/de/ueber-uns/mannschaft/", True),
    ]
    assert report["verdict"][-1].startswith("a save now: 2 URL(s) would be sent")
    assert engine.posts == []

    out = StringIO()
    call_command("indexnow_explain", "cms.Page", str(tree.team.pk), stdout=out)
    text = out.getvalue()
    assert "Covered by: the django CMS integration (indexnow_django.contrib.djangocms)" in text
    assert f"de: a published version, live at {W}/de/ueber-uns/mannschaft/" in text


def test_explain_says_why_a_page_is_not_live(tree: Tree, admin, engine) -> None:
    child = admin_add(admin, tree.about, "Draft child", "draft-child")
    admin_unpublish(admin, tree.about)

    unpublished = explain("cms.Page", tree.about.pk)
    under = explain("cms.Page", tree.team.pk)
    never = explain("cms.Page", child.pk)

    assert unpublished["public"] is True  # still in German
    assert unpublished["why"] == [
        "en: no published version (a draft, or unpublished): not public",
        f"de: a published version, live at {W}/de/ueber-uns/",
    ]
    assert under["why"][0] == "en: published, but a page above it is not: it has no URL"
    assert [u["language"] for u in under["urls"]] == ["de"]
    assert never["public"] is False
    assert never["why"] == ["en: no published version (a draft, or unpublished): not public"]
    assert never["verdict"][0].startswith("the object is not public now")


def submit(*args: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("indexnow_submit", *args, stdout=out, stderr=out)
    except CommandError as exc:
        return 1, out.getvalue() + str(exc)
    return 0, out.getvalue()


def test_submit_every_live_page_of_both_sites(tree: Tree, engine) -> None:
    draft(tree.news, tree.user, slug="press")  # a draft does not count
    code, output = submit("--model", "cms.Page", "--sync")
    assert code == 0, output
    assert posted(engine) == sorted(
        [
            f"{W}/",
            f"{W}/about/",
            f"{W}/about/team/",
            f"{W}/news/",
            f"{W}/de/",
            f"{W}/de/ueber-uns/",
            f"{W}/de/ueber-uns/mannschaft/",
            f"{BLOG}/",
            f"{BLOG}/post/",
        ]
    )


def test_submit_chosen_pages_and_contents(tree: Tree, engine) -> None:
    german_team = content(tree.team, "de")
    code, output = submit(
        "--model", "cms.PageContent", "--pk", str(german_team.pk), "--pk", "999999", "--sync"
    )
    assert code == 0, output
    assert "cms.PageContent pk=999999: skipped: no such object" in output, output
    assert posted(engine) == [f"{W}/de/ueber-uns/mannschaft/"]

    engine.reset()
    draft_news = draft(tree.news, tree.user, slug="press")
    code, output = submit("--model", "cms.PageContent", "--pk", str(draft_news.pk), "--sync")
    assert f"pk={draft_news.pk}: skipped: not public: not the published version" in output, output
    assert engine.posts == []
    code, output = submit("--model", "cms.Page", "--pk", str(tree.news.pk), "--sync")
    assert code == 0, output
    assert posted(engine) == [f"{W}/news/"]
    assert Page.objects.filter(pk=tree.news.pk).exists()


def test_an_unsupported_django_cms_is_named_by_a_check(tree: Tree, monkeypatch) -> None:
    from django.core import checks

    from indexnow_django.contrib.djangocms import apps as integration

    assert [m.id for m in checks.run_checks(tags=["indexnow"])] == []  # this django CMS
    monkeypatch.setattr(integration, "cms_version", lambda: "5.0.13")

    found = [m for m in checks.run_checks(tags=["indexnow"]) if m.id == "indexnow.W040"]

    assert found == [
        checks.Warning(
            "indexnow_django.contrib.djangocms follows django CMS 5.1 and later; this is "
            "django CMS 5.0.13, which keeps slugs outside the versions it publishes: a slug "
            "change is not followed (the old URLs of a page and its descendants are not "
            "submitted).",
            hint="Upgrade django CMS to 5.1 or later (with djangocms-versioning 2.8).",
            obj="indexnow_django.contrib.djangocms",
            id="indexnow.W040",
        )
    ]


def test_without_djangocms_versioning_the_app_refuses_to_start(monkeypatch) -> None:
    from django.apps import apps
    from django.core.exceptions import ImproperlyConfigured

    installed = apps.is_installed
    monkeypatch.setattr(
        apps, "is_installed", lambda name: name != "djangocms_versioning" and installed(name)
    )
    with pytest.raises(ImproperlyConfigured) as raised:
        apps.get_app_config("indexnow_djangocms").ready()
    assert str(raised.value) == (
        "indexnow_django.contrib.djangocms needs 'djangocms_versioning' in INSTALLED_APPS "
        "(before it)."
    )
