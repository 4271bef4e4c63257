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


@pytest.mark.parametrize("label", ["cms.Page", "cms.PageContent"])
def test_explain_an_unknown_pk_fails_cleanly(tree: Tree, label: str) -> None:
    with pytest.raises(CommandError, match="no object with pk=424242"):
        call_command("indexnow_explain", label, "424242")
