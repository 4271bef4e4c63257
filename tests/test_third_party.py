"""Tracking on the apps Django sites are built from, as docs/third-party.md shows them:
real django-parler, django-taggit, django-treebeard and django-mptt, through their
admin where they have one, asserting the URLs the loopback engine received.

Outside any unit of work each commit flushes its own URLs, and the test settings
send synchronously to the loopback engine, so every flush is one POST. Debouncing
is off, so that a URL sent twice shows twice.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from django.db import transaction

from tests.thirdparty.models import Lesson

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "https://www.example.com"


@pytest.fixture(autouse=True)
def _no_debounce(indexnow_settings: Any) -> None:
    indexnow_settings(DEBOUNCE={"TTL": 0})


def sent(engine: Any) -> list[list[str]]:
    """The URL list of every POST the engine received, in order."""
    return [post.urls for post in engine.posts]


# "Before" is built as Django builds an object ---------------------------------------


@pytest.mark.parametrize("in_a_transaction", [False, True], ids=["autocommit", "atomic"])
def test_a_model_whose_init_sets_what_urls_reads(engine: Any, in_a_transaction: bool) -> None:
    lesson = Lesson.objects.create(slug="first")
    assert sent(engine) == [[f"{BASE}/lessons/first/"]]
    engine.reset()
    with transaction.atomic() if in_a_transaction else contextlib.nullcontext():
        lesson = Lesson.objects.get(pk=lesson.pk)
        lesson.slug = "renamed"
        lesson.save()
    assert sent(engine) == [[f"{BASE}/lessons/renamed/", f"{BASE}/lessons/first/"]]
    engine.reset()
    # Never loaded: built by hand with the primary key of its row.
    Lesson(pk=lesson.pk, slug="by-hand").save()
    assert sent(engine) == [[f"{BASE}/lessons/by-hand/", f"{BASE}/lessons/renamed/"]]
    engine.reset()
    lesson = Lesson.objects.get(pk=lesson.pk)
    lesson.delete()
    assert sent(engine) == [[f"{BASE}/lessons/by-hand/"]]
