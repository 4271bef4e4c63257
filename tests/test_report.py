"""``manage.py indexnow_report``: per model, URLs flushed, accepted by every engine and how long
after their flush, not accepted yet, skipped by the preflight; figures that match the history."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from indexnow_django.models import Delivery
from indexnow_django.ops.report import OTHER, percentile
from tests.conftest import make_delivery
from tests.needs import ONE_JOB
from tests.testapp.models import Page, Post

pytestmark = pytest.mark.django_db

BASE = "https://www.example.com"


def report(*args: str) -> dict[str, Any]:
    out = StringIO()
    call_command("indexnow_report", "--json", *args, stdout=out)
    document: dict[str, Any] = json.loads(out.getvalue())
    return document


def by_model(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {model["model"]: model for model in document["models"]}


def nearest_rank(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(fraction * len(ordered))) - 1]


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(n) for n in range(1, 21)]
    assert percentile(values, 0.5) == 10.0
    assert percentile(values, 0.95) == 19.0
    assert percentile([3.0], 0.95) == 3.0
    assert percentile([], 0.5) is None


def test_figures_per_model_from_hand_written_history(
    history_on: Any, indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(ENGINES=["indexnow", "bing"])
    posts = [
        Post.objects.create(title=f"P{n}", slug=f"p{n}", status=Post.PUBLISHED) for n in range(4)
    ]
    Page.objects.create(path="/about/")
    Delivery.objects.all().delete()  # nothing was sent (the test's transaction holds it)
    now = timezone.now()
    flush = now - timedelta(hours=2)
    post_urls = [f"{BASE}/posts/{post.slug}/" for post in posts]

    def row(engine: str, outcome: str, urls: list[str], after: float, **fields: Any) -> None:
        make_delivery(
            engine=engine,
            outcome=outcome,
            urls="\n".join(urls),
            sent_at=flush + timedelta(seconds=after),
            flushed_at=flush,
            batch_id=fields.pop("batch_id", "b1"),
            **fields,
        )

    # p0, p1: both engines accept, bing after a retry (from the flush: 4 s and 64 s).
    row("indexnow", "accepted", post_urls[:2], 4, status=200)
    row("bing", "retry", post_urls[:2], 5, status=429, answer="bing answered 429: slow down")
    row("bing", "accepted", post_urls[:2], 64, status=200, attempt=2)
    # p2: indexnow accepts, bing keeps failing.
    row("indexnow", "accepted", post_urls[2:3], 3, status=200)
    row("bing", "retry", post_urls[2:3], 3, status=503, answer="bing answered 503: busy")
    row("bing", "retry", post_urls[2:3], 33, status=429, answer="bing answered 429: later")
    # p3: skipped by the preflight.
    row("preflight", "skipped", post_urls[3:], 1, status=None, answer="noindex")
    # The page, flushed twice: each flush counts.
    row("indexnow", "accepted", [f"{BASE}/about/"], 10, status=200, batch_id="b2")
    row("bing", "accepted", [f"{BASE}/about/"], 12, status=200, batch_id="b2")
    row("indexnow", "accepted", [f"{BASE}/about/"], 100, status=200, batch_id="b3")
    row("bing", "accepted", [f"{BASE}/about/"], 101, status=200, batch_id="b3")
    # A URL no object has, and a record older than the period, and a dry run.
    row("indexnow", "accepted", [f"{BASE}/by-hand/"], 2, status=200, batch_id="b4")
    make_delivery(age_days=9, urls=post_urls[0], flushed_at=now - timedelta(days=9))
    make_delivery(outcome="dry_run", urls=post_urls[1], status=None, batch_id="dry")

    document = report("--days", "7")

    models = by_model(document)
    assert list(models) == ["testapp.Page", "testapp.Post", OTHER]
    post = models["testapp.Post"]
    assert (post["flushed"], post["accepted"], post["not_accepted"], post["skipped"]) == (
        4,
        2,
        1,
        1,
    )
    assert (post["p50_seconds"], post["p95_seconds"]) == (64.0, 64.0)
    assert post["not_accepted_urls"] == [
        {
            "url": post_urls[2],
            "engine": "bing",
            "last_answer": "429: later",
            "answers": {"bing": "429: later", "indexnow": "200"},
        }
    ]
    assert post["skipped_urls"] == [{"url": post_urls[3], "reason": "noindex"}]
    about = models["testapp.Page"]
    assert (about["flushed"], about["accepted"], about["p50_seconds"], about["p95_seconds"]) == (
        2,
        2,
        12.0,
        101.0,
    )
    assert (models[OTHER]["flushed"], models[OTHER]["accepted"]) == (1, 1)


def test_the_text_report(history_on: Any) -> None:
    post = Post.objects.create(title="A", slug="a", status=Post.PUBLISHED)
    Delivery.objects.all().delete()
    flush = timezone.now() - timedelta(minutes=5)
    url = f"{BASE}/posts/{post.slug}/"
    make_delivery(urls=url, flushed_at=flush, sent_at=flush + timedelta(seconds=3))
    out = StringIO()

    call_command("indexnow_report", stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[0].startswith("IndexNow freshness over the last 7 day(s), since ")
    assert lines[1] == (
        "testapp.Post: 1 flushed, 1 accepted by every engine (p50 3.0s, p95 3.0s after the "
        "flush), 0 not accepted yet, 0 skipped by the preflight"
    )


def test_a_url_not_accepted_is_listed_once_with_each_engines_last_answer(
    history_on: Any, indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(ENGINES=["indexnow", "bing"])
    stuck, recovered = (
        Post.objects.create(title=slug, slug=slug, status=Post.PUBLISHED)
        for slug in ("stuck", "recovered")
    )
    Delivery.objects.all().delete()
    now = timezone.now()
    stuck_url, recovered_url = (f"{BASE}/posts/{post.slug}/" for post in (stuck, recovered))

    def flushed(url: str, batch_id: str, minutes_ago: int, *answers: tuple[Any, ...]) -> None:
        """A flush of ``url``, and each engine's answer ``(engine, outcome, status, text)``."""
        flush = now - timedelta(minutes=minutes_ago)
        for engine, outcome, status, answer in answers:
            make_delivery(
                engine=engine,
                outcome=outcome,
                status=status,
                answer=answer,
                urls=url,
                batch_id=batch_id,
                flushed_at=flush,
                sent_at=flush + timedelta(seconds=2),
            )

    # The stuck post, saved three times: indexnow accepts each flush, bing refuses each.
    for n in range(3):
        flushed(
            stuck_url,
            f"s{n}",
            30 - n,
            ("indexnow", "accepted", 200, ""),
            ("bing", "rejected", 403, f"bing answered 403: no key {n}"),
        )
    # The other, refused once, then accepted by both on its next flush.
    refused = [(engine, "rejected", 403, "") for engine in ("indexnow", "bing")]
    flushed(recovered_url, "r0", 10, *refused)
    flushed(recovered_url, "r1", 9, *[(e, "accepted", 200, "") for e in ("indexnow", "bing")])

    post = by_model(report())["testapp.Post"]
    out = StringIO()
    call_command("indexnow_report", stdout=out)

    assert post["not_accepted"] == 1
    assert post["not_accepted_urls"] == [
        {
            "url": stuck_url,
            "engine": "bing",
            "last_answer": "403: no key 2",
            "answers": {"bing": "403: no key 2", "indexnow": "200"},
        }
    ]
    listed = [line for line in out.getvalue().splitlines() if "not accepted:" in line]
    assert listed == [f"  not accepted: {stuck_url} (bing: 403: no key 2; indexnow: 200)"]


@pytest.mark.indexnow(HISTORY={"ENABLED": False})
def test_without_the_history_there_is_nothing_to_report() -> None:
    with pytest.raises(CommandError, match=r"HISTORY'\]\['ENABLED'\] is False"):
        call_command("indexnow_report", stdout=StringIO())


def test_days_must_be_positive(history_on: Any) -> None:
    with pytest.raises(CommandError, match="--days must be 1 or more, not 0"):
        call_command("indexnow_report", "--days", "0", stdout=StringIO())


def test_the_admins_deliveries_page_links_to_the_report(client: Any, history_on: Any) -> None:
    import re

    from tests.test_admin import LIST, staff

    post = Post.objects.create(title="A", slug="a", status=Post.PUBLISHED)
    Delivery.objects.all().delete()
    flush = timezone.now() - timedelta(minutes=5)
    make_delivery(
        urls=f"{BASE}/posts/{post.slug}/", flushed_at=flush, sent_at=flush + timedelta(seconds=3)
    )
    assert client.get(f"{LIST}report/").status_code == 302  # to the login page
    staff(client, "indexnow.view_delivery")

    listing = client.get(LIST).content.decode()
    [link] = re.findall(r'<a href="([^"]+)" class="viewlink">Freshness report</a>', listing)
    page = client.get(link)

    assert page.status_code == 200
    html = page.content.decode()
    [row] = re.findall(r'<tr data-model="testapp.Post">(.*?)</tr>', html, re.S)
    cells = [
        " ".join(re.sub(r"<[^>]+>", " ", cell).split())
        for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
    ]
    assert cells == ["testapp.Post", "1", "1", "3.0", "3.0", "0", "0"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_after_a_workers_deliveries_with_retries_the_figures_match_the_history(
    engine: Any,
    history_on: dict[str, Any],
    indexnow_settings: Callable[..., Any],
    start_worker: Callable[..., Any],
    redis_conn: Any,
) -> None:
    import indexnow_django
    from indexnow_django.testing import Reply
    from tests.rqhelpers import FAST_RETRY, wait_for_count

    overrides = {
        **history_on,
        **ONE_JOB,  # a job per flush
        "RETRY": dict(FAST_RETRY),
    }
    indexnow_settings(**overrides)
    # The first POST (the first flush's two posts) is answered 503, its retry 200; the
    # second flush is accepted at once.
    engine.queue_replies(Reply(503, body="busy"))
    with indexnow_django.batch():
        first = [
            Post.objects.create(title=f"P{n}", slug=f"p{n}", status=Post.PUBLISHED)
            for n in range(2)
        ]
    with indexnow_django.batch():
        second = Post.objects.create(title="P2", slug="p2", status=Post.PUBLISHED)
    start_worker(overrides)
    wait_for_count(lambda: Delivery.objects.filter(outcome="accepted").count(), 2, timeout=60)

    document = report("--days", "1")

    records = list(Delivery.objects.order_by("sent_at"))
    assert sorted((r.outcome, r.attempt, r.url_count) for r in records) == [
        ("accepted", 1, 1),
        ("accepted", 2, 2),
        ("retry", 1, 2),
    ]
    retried = next(r for r in records if r.outcome == "retry")
    accepted = {r.batch_id: r for r in records if r.outcome == "accepted"}
    assert retried.flushed_at == accepted[retried.batch_id].flushed_at
    delays = [
        (r.sent_at - r.flushed_at).total_seconds() for r in accepted.values() for _ in r.url_list
    ]
    assert len(delays) == 3
    # The retried URLs count from their flush, past the retry's delay.
    assert (accepted[retried.batch_id].sent_at - retried.flushed_at).total_seconds() >= 1
    [post] = document["models"]
    assert post["model"] == "testapp.Post"
    assert (post["flushed"], post["accepted"], post["not_accepted"], post["skipped"]) == (
        3,
        3,
        0,
        0,
    )
    assert post["p50_seconds"] == round(nearest_rank(delays, 0.5), 3)
    assert post["p95_seconds"] == round(nearest_rank(delays, 0.95), 3)
    assert {url for r in accepted.values() for url in r.url_list} == {
        f"{BASE}/posts/{p.slug}/" for p in [*first, second]
    }
