"""``manage.py indexnow_report`` on Wagtail pages: their URLs count under "Wagtail pages"."""

from __future__ import annotations

import json
from io import StringIO

from django.core.management import call_command

from indexnow_django.models import Delivery
from indexnow_django.testing import LoopbackEngine
from tests.wagtail_site.fixtures import Tree

W = "https://www.example.com"


def test_a_published_page_is_reported_under_wagtail_pages(
    tree: Tree, engine: LoopbackEngine
) -> None:
    Delivery.objects.all().delete()  # what building the tree sent
    tree.first.save_revision().publish()
    assert engine.posted_urls() == [f"{W}/news/first/"]
    out = StringIO()

    call_command("indexnow_report", "--json", stdout=out)

    [pages] = json.loads(out.getvalue())["models"]
    assert pages["model"] == "Wagtail pages"
    assert (pages["flushed"], pages["accepted"], pages["not_accepted"]) == (1, 1, 0)
    assert pages["p50_seconds"] is not None
