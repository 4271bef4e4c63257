"""``manage.py indexnow_explain app_label.Model PK``: what applies to one object, sending
nothing; its JSON and its text."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterator
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from indexnow_django import ModelIndexNow, register
from indexnow_django.registration.registry import unregister
from indexnow_django.testing import LoopbackEngine
from tests.conftest import make_delivery
from tests.testapp.models import Page, Post, Untracked

BASE = "https://www.example.com"

pytestmark = pytest.mark.django_db


def explain(*args: str) -> dict[str, Any]:
    out = StringIO()
    call_command("indexnow_explain", *args, "--json", stdout=out)
    document: dict[str, Any] = json.loads(out.getvalue())
    return document


def text(*args: str) -> str:
    out = StringIO()
    call_command("indexnow_explain", *args, stdout=out, no_color=True)
    return out.getvalue()


def post(**fields: Any) -> Post:
    values = {
        "title": "Hello",
        "slug": "hello",
        "status": Post.PUBLISHED,
        "published_at": timezone.now() - datetime.timedelta(days=1),
        **fields,
    }
    return Post.objects.bulk_create([Post(**values)])[0]  # no signal: nothing is submitted


def test_a_public_object_shows_its_registration_urls_host_and_key(engine: LoopbackEngine) -> None:
    obj = post()

    report = explain("testapp.Post", str(obj.pk))

    assert report["object"] == {"model": "testapp.Post", "pk": str(obj.pk), "str": "Hello"}
    assert report["covered_by"]["kind"] == "registration"
    assert report["covered_by"]["class"] == "tests.testapp.indexnow.PostIndexNow"
    assert report["covered_by"]["publish_at"] == "published_at"
    assert report["public"] is True
    assert report["why"][0] == "is_published() is true"
    assert "past" in report["why"][1]
    [url] = report["urls"]
    assert url["url"] == f"{BASE}/posts/hello/"
    assert url["allowed"] is True
    assert url["key"] == "test…"
    assert url["key_file"] == f"{BASE}/test….txt"
    assert report["verdict"][-1] == (
        f"a save now: 1 URL(s) would be sent to 127.0.0.1:{engine.port}/indexnow"
    )
    assert engine.posts == []  # sends nothing


def test_a_draft_says_it_is_not_public_and_nothing_would_be_sent(engine: LoopbackEngine) -> None:
    obj = post(status=Post.DRAFT)

    report = explain("testapp.Post", str(obj.pk))

    assert report["public"] is False
    assert report["why"][0] == "is_published() is false: not public"
    assert report["urls"] == []
    assert report["verdict"][0].startswith("the object is not public now")
    assert not any(line.startswith("a save now") for line in report["verdict"])


def test_a_future_publication_shows_the_scheduled_job_waiting(
    engine: LoopbackEngine,
    indexnow_settings: Callable[..., Any],
    redis_conn: redis.Redis,
    django_capture_on_commit_callbacks: Any,
) -> None:
    indexnow_settings(DISPATCH="queue")
    with django_capture_on_commit_callbacks(execute=True):
        # Saved through the ORM: tracking schedules its publication at commit.
        obj = Post.objects.create(
            title="Soon",
            slug="soon",
            status=Post.PUBLISHED,
            published_at=timezone.now() + datetime.timedelta(hours=2),
        )

    report = explain("testapp.Post", str(obj.pk))

    assert report["public"] is False
    assert "in the future: not public yet" in report["why"][1]
    assert report["scheduled"]["state"] == "waits in rq's scheduled job registry"
    assert report["scheduled"]["job_id"].startswith("indexnow-publish-testapp_post-")

    Post.objects.filter(pk=obj.pk).update(published_at=timezone.now() + datetime.timedelta(days=3))
    moved = explain("testapp.Post", str(obj.pk))
    assert moved["scheduled"]["state"] == "not found: save the object again to schedule it"


def test_debounce_state_and_last_deliveries_come_from_the_store_and_the_history(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any], history_on: Any
) -> None:
    indexnow_settings(DEBOUNCE={"CACHE": "shared", "TTL": 600})
    obj = post()
    make_delivery(age_days=2, outcome="rejected", status=422, urls=f"{BASE}/posts/hello/")
    call_command("indexnow_submit", "--model", "testapp.Post", "--sync", stdout=StringIO())
    assert len(engine.posts) == 1

    report = explain("testapp.Post", str(obj.pk))

    [state] = report["debounce"]
    assert state["debounced"] is True
    assert state["last_accepted"] is not None
    assert state["state"].startswith("accepted recently: not sent again before ")
    assert [(d["outcome"], d["status"]) for d in report["deliveries"]] == [
        ("accepted", 200),
        ("rejected", 422),
    ]
    assert any("accepted recently" in line for line in report["verdict"])
    assert not any(line.startswith("a save now") for line in report["verdict"])
    assert len(engine.posts) == 1


def test_a_url_on_a_host_that_is_not_allowed_says_why(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(BASE_URL="https://www.example.com", HOSTS=["blog.example.com"])
    obj = post()

    report = explain("testapp.Post", str(obj.pk))

    [url] = report["urls"]
    assert url["allowed"] is False
    assert "www.example.com" in url["problem"]
    assert any(line.startswith("/posts/hello/: ") for line in report["verdict"])


def test_an_unregistered_model_is_covered_by_nothing() -> None:
    obj = Untracked.objects.create(title="x", slug="x")

    report = explain("testapp.Untracked", str(obj.pk))

    assert report["covered_by"] is None
    assert report["verdict"] == ["no registration covers the model"]


@pytest.fixture
def page_in_languages() -> Iterator[None]:
    """``Page`` registered with ``languages``, as a multilingual registration exposes them."""

    class PageInLanguages(ModelIndexNow):
        languages = ["en", "fr"]

        def urls(self, obj: Any) -> list[str]:
            from django.utils import translation

            return [f"/{translation.get_language()}{obj.path}"]

    unregister(Page)
    register(Page, PageInLanguages)
    yield
    unregister(Page)
    register(Page)


def test_urls_per_language_when_the_registration_exposes_languages(
    engine: LoopbackEngine, page_in_languages: None
) -> None:
    obj = Page.objects.bulk_create([Page(path="/about/")])[0]

    report = explain("testapp.Page", str(obj.pk))

    assert [(u["language"], u["url"]) for u in report["urls"]] == [
        ("en", f"{BASE}/en/about/"),
        ("fr", f"{BASE}/fr/about/"),
    ]


def test_the_text_output_reads_top_down(engine: LoopbackEngine) -> None:
    obj = post()

    output = text("testapp.Post", str(obj.pk))

    lines = output.splitlines()
    assert lines[0] == f"testapp.Post pk={obj.pk}: Hello"
    assert "  Covered by: tests.testapp.indexnow.PostIndexNow; fields: title, slug," in output
    assert "  Public now: yes" in lines
    assert (
        f"    {BASE}/posts/hello/: host www.example.com allowed, key test…, "
        f"key file {BASE}/test….txt"
    ) in lines
    assert "  Last deliveries: none in the history" in lines
    assert (
        lines[-1] == f"    - a save now: 1 URL(s) would be sent to 127.0.0.1:{engine.port}/indexnow"
    )
    assert engine.posts == []


@pytest.mark.indexnow(HISTORY={"ENABLED": False})
def test_without_the_history_it_says_it_cannot_list_deliveries() -> None:
    obj = post()

    assert "  Last deliveries: the history is off (HISTORY['ENABLED'])" in (
        text("testapp.Post", str(obj.pk)).splitlines()
    )


def test_errors_name_the_model_or_the_object() -> None:
    with pytest.raises(CommandError, match=r"blog\.Post: no such model"):
        explain("blog.Post", "1")
    with pytest.raises(CommandError, match=r"testapp\.Post has no object with pk=999"):
        explain("testapp.Post", "999")
    with pytest.raises(CommandError, match=r"testapp\.Post: 'abc' is not a primary key"):
        explain("testapp.Post", "abc")
