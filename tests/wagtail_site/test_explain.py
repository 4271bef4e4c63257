"""``manage.py indexnow_explain`` on Wagtail pages: the integration covers them."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

from django.core.management import call_command
from wagtail.models import PageViewRestriction

from indexnow_django.testing import LoopbackEngine
from tests.wagtail_site.fixtures import Tree

W = "https://www.example.com"


def explain(page: Any) -> dict[str, Any]:
    out = StringIO()
    call_command("indexnow_explain", page._meta.label, str(page.pk), "--json", stdout=out)
    document: dict[str, Any] = json.loads(out.getvalue())
    return document


def test_a_live_page_is_covered_by_the_integration_with_its_full_url(
    tree: Tree, engine: LoopbackEngine
) -> None:
    report = explain(tree.first)

    assert report["covered_by"] == {
        "kind": "wagtail",
        "integration": "indexnow_django.contrib.wagtail",
    }
    assert report["public"] is True
    assert report["why"] == ["live"]
    assert [(u["url"], u["allowed"]) for u in report["urls"]] == [(f"{W}/news/first/", True)]
    assert report["verdict"][-1].startswith("a save now: 1 URL(s) would be sent")
    assert engine.posts == []


def test_a_private_or_unpublished_page_says_why_it_is_not_public(
    tree: Tree, engine: LoopbackEngine
) -> None:
    PageViewRestriction.objects.create(page=tree.news, restriction_type=PageViewRestriction.LOGIN)
    tree.second.unpublish()

    private = explain(tree.first)
    unpublished = explain(tree.reload().second)

    assert private["public"] is False
    assert any("view restriction" in reason for reason in private["why"])
    assert unpublished["public"] is False
    assert unpublished["why"][0].startswith("not live")
    assert private["urls"] == unpublished["urls"] == []
