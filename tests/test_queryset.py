"""Bulk operations that Django runs without signals, and ``submit_objects()``.

These tests send at once, in process, to the loopback engine (``AT_ONCE``): each
flush is one POST the engine received (debouncing off, so a URL sent twice shows twice).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Concat

from indexnow_django import IndexNowQuerySet, IndexNowQuerySetMixin, batch, submit_objects
from indexnow_django.exceptions import RegistrationError
from tests.needs import AT_ONCE
from tests.testapp.models import Item, Page, Untracked

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.indexnow(**AT_ONCE, DEBOUNCE={"TTL": 0}),
]

BASE = "https://www.example.com"


def items(count: int, status: str = "published", prefix: str = "item") -> list[Item]:
    return Item.objects.bulk_create(Item(slug=f"{prefix}-{n}", status=status) for n in range(count))


def url(slug: str) -> str:
    return f"{BASE}/items/{slug}/"


def test_the_names_are_exported() -> None:
    assert issubclass(IndexNowQuerySet, IndexNowQuerySetMixin)
    assert isinstance(Item.objects.all(), IndexNowQuerySet)


def test_bulk_create_submits_the_public_objects_in_one_flush(engine: Any) -> None:
    Item.objects.bulk_create(
        [Item(slug="a", status="published"), Item(slug="b"), Item(slug="c", status="published")]
    )
    assert [post.urls for post in engine.posts] == [[url("a"), url("c")]]


def test_an_update_that_unpublishes_fifty_objects_submits_their_fifty_old_urls(
    engine: Any,
) -> None:
    items(50)
    items(5, status="draft", prefix="draft")
    engine.reset()
    assert Item.objects.filter(slug__startswith="item-").update(status="draft") == 50
    [post] = engine.posts
    assert sorted(post.urls) == sorted(url(f"item-{n}") for n in range(50))


def test_an_update_of_slugs_submits_old_and_new_urls(engine: Any) -> None:
    items(2)
    engine.reset()
    Item.objects.update(slug=Concat(F("slug"), Value("-moved")))
    [post] = engine.posts
    assert sorted(post.urls) == sorted(
        [url("item-0"), url("item-1"), url("item-0-moved"), url("item-1-moved")]
    )


def test_an_update_outside_fields_or_of_drafts_submits_nothing(engine: Any) -> None:
    items(3)
    items(3, status="draft", prefix="draft")
    engine.reset()
    Item.objects.update(stock=F("stock") + 1)  # stock is not in fields
    Item.objects.filter(status="draft").update(slug="still-a-draft")
    assert engine.posts == []


def test_an_update_that_publishes_submits_the_new_urls(engine: Any) -> None:
    items(2, status="draft")
    Item.objects.update(status="published")
    assert [sorted(post.urls) for post in engine.posts] == [[url("item-0"), url("item-1")]]


def test_a_rolled_back_update_submits_nothing(engine: Any) -> None:
    items(3)
    engine.reset()
    with transaction.atomic():
        Item.objects.update(status="draft")
        transaction.set_rollback(True)
    assert engine.posts == []


def test_bulk_update_follows_the_change_table(engine: Any) -> None:
    first, second, third = items(3)
    engine.reset()
    first.slug = "first-renamed"
    second.status = "draft"
    third.stock = 7
    Item.objects.bulk_update([first, second, third], ["slug", "status", "stock"])
    [post] = engine.posts
    assert post.urls == [url("first-renamed"), url("item-0"), url("item-1")]
    engine.reset()
    third.stock = 8
    third.slug = "not-saved"  # not among the fields bulk_update writes
    Item.objects.bulk_update([third], ["stock"])
    assert engine.posts == []


def test_submit_objects_submits_the_public_objects_of_a_queryset(engine: Any) -> None:
    items(3)
    items(2, status="draft", prefix="draft")
    engine.reset()
    assert submit_objects(Item.objects.order_by("slug")) == 3
    assert [post.urls for post in engine.posts] == [[url("item-0"), url("item-1"), url("item-2")]]


def test_submit_objects_joins_the_current_unit_of_work(engine: Any) -> None:
    created = items(2)
    engine.reset()
    with batch():
        Page.objects.create(path="/page/")
        submit_objects(created)  # a plain list
    assert [post.urls for post in engine.posts] == [[f"{BASE}/page/", url("item-0"), url("item-1")]]


def test_submit_objects_of_an_unregistered_model_is_a_clear_error(engine: Any) -> None:
    stray = Untracked.objects.create(title="Stray", slug="stray")
    with pytest.raises(RegistrationError) as error:
        submit_objects([*items(1), stray])
    assert str(error.value) == (
        "submit_objects() got a testapp.Untracked object, a model that is not registered "
        "with IndexNow."
    )
    assert [post.urls for post in engine.posts] == [[url("item-0")]]  # bulk_create only


def test_disabled_bulk_operations_are_djangos_own(engine: Any, indexnow_settings: Any) -> None:
    indexnow_settings(ENABLED=False)
    items(2)
    assert Item.objects.update(status="draft") == 2
    assert submit_objects(Item.objects.all()) == 0
    assert engine.posts == []


# Upserts: bulk_create(update_conflicts=True) --------------------------------------------


def entries(*pairs: tuple[str, str]) -> list[Any]:
    from tests.thirdparty.models import Entry

    return [Entry(code=code, slug=slug) for code, slug in pairs]


def test_an_upsert_submits_old_and_new_urls_of_the_rows_it_changed(engine: Any) -> None:
    from tests.thirdparty.models import Entry

    Entry.objects.bulk_create(entries(("u1", "u1-same"), ("u2", "u2-same"), ("u3", "u3-old")))
    engine.reset()
    Entry.objects.bulk_create(
        entries(("u1", "u1-same"), ("u3", "u3-new"), ("u4", "u4-created")),
        update_conflicts=True,
        unique_fields=["code"],
        update_fields=["slug"],
    )
    assert dict(Entry.objects.values_list("code", "slug")) == {
        "u1": "u1-same",
        "u2": "u2-same",
        "u3": "u3-new",
        "u4": "u4-created",
    }
    [post] = engine.posts
    assert sorted(post.urls) == sorted(
        [f"{BASE}/entries/u3-new/", f"{BASE}/entries/u3-old/", f"{BASE}/entries/u4-created/"]
    )


def test_an_ignored_conflict_submits_nothing_for_the_row_that_was_there(engine: Any) -> None:
    from tests.thirdparty.models import Entry

    Entry.objects.bulk_create(entries(("u1", "u1-old")))
    engine.reset()
    Entry.objects.bulk_create(
        entries(("u1", "u1-ignored"), ("u2", "u2-new")), ignore_conflicts=True
    )
    assert dict(Entry.objects.values_list("code", "slug")) == {"u1": "u1-old", "u2": "u2-new"}
    assert [post.urls for post in engine.posts] == [[f"{BASE}/entries/u2-new/"]]
