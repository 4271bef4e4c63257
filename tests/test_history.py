"""The history of POSTs: one Delivery row per POST, written by whoever posts, and its retention."""

from __future__ import annotations

import logging

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from indexnow_django.conf import Problem, validate
from indexnow_django.models import Delivery
from indexnow_django.sending import history
from indexnow_django.sending.send import deliver_now
from indexnow_django.testing import Reply
from tests.conftest import make_delivery
from tests.needs import AT_ONCE

# The POSTs here are made at once, in process: each is recorded when it returns.
pytestmark = [pytest.mark.django_db, pytest.mark.indexnow(**AT_ONCE)]


def test_each_post_is_recorded_with_what_the_engine_answered(engine, history_on):
    engine.queue_replies(Reply(202), Reply(422, "Unprocessable Entity: URLs do not match"))
    deliver_now(["/a/", "/b/"], batch_id="batch1")
    deliver_now(["/c/"], batch_id="batch2")

    first, second = Delivery.objects.order_by("pk")
    assert (first.batch_id, first.outcome, first.status, first.url_count, first.attempt) == (
        "batch1",
        "accepted",
        202,
        2,
        1,
    )
    assert first.url_list == ["https://www.example.com/a/", "https://www.example.com/b/"]
    assert first.host == "www.example.com"
    assert first.engine == engine.url.split("/", 2)[2]  # the endpoint, without its scheme
    assert first.duration > 0
    assert first.job_id == ""
    assert (second.outcome, second.status) == ("rejected", 422)
    assert "URLs do not match" in second.answer
    assert second.sent_at <= timezone.now()


def test_one_insert_per_post_not_per_url(engine, history_on):
    urls = [f"/p/{i}/" for i in range(2500)]
    with CaptureQueriesContext(connection) as queries:
        deliver_now(urls, batch_id="big")
    inserts = [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith("INSERT")]
    assert len(inserts) == 1
    [row] = Delivery.objects.all()
    assert row.url_count == 2500
    assert row.url_list == [f"https://www.example.com/p/{i}/" for i in range(2500)]


def test_dry_run_is_recorded_as_such(engine, history_on, indexnow_settings):
    indexnow_settings(DRY_RUN=True)
    deliver_now(["/a/"])
    [row] = Delivery.objects.all()
    assert (row.outcome, row.status) == ("dry_run", None)
    assert engine.posts == []


def test_disabled_history_records_nothing(engine, indexnow_settings):
    indexnow_settings(HISTORY={"ENABLED": False})
    deliver_now(["/a/"])
    assert len(engine.posts) == 1
    assert not Delivery.objects.exists()


class _NowhereRouter:
    """Sends history writes to a database alias that does not exist."""

    def db_for_write(self, model, **hints):
        return "missing" if model is Delivery else None


def test_a_failure_to_record_is_logged_and_the_delivery_goes_on(
    engine, history_on, settings, caplog
):
    settings.DATABASE_ROUTERS = [f"{__name__}._NowhereRouter"]
    with caplog.at_level(logging.WARNING, logger="indexnow_django.sending.history"):
        report = deliver_now(["/a/"], batch_id="b1")
    assert report.sent_count == 1
    assert engine.posted_urls() == ["https://www.example.com/a/"]
    [message] = [
        r.getMessage() for r in caplog.records if r.name == "indexnow_django.sending.history"
    ]
    assert "history not recorded batch=b1" in message


def test_retries_in_one_process_count_attempts(engine, history_on):
    engine.queue_replies(Reply(503), Reply(200))
    deliver_now(["/a/"], batch_id="again")
    deliver_now(["/a/"], batch_id="again")
    assert list(Delivery.objects.order_by("pk").values_list("outcome", "attempt")) == [
        ("retry", 1),
        ("accepted", 2),
    ]


def test_records_older_than_the_retention_go_when_new_ones_are_written(
    engine, history_on, indexnow_settings
):
    indexnow_settings(HISTORY={"RETENTION_DAYS": 3})
    gone = make_delivery(3.1)
    kept = make_delivery(2.9)
    deliver_now(["/a/"])
    assert not Delivery.objects.filter(pk=gone.pk).exists()
    assert Delivery.objects.filter(pk=kept.pk).exists()
    assert Delivery.objects.count() == 2


def test_retention_runs_at_most_once_an_hour_per_process(engine, history_on, monkeypatch):
    deliver_now(["/a/"])  # the first record of the process purges
    late = make_delivery(20)
    with CaptureQueriesContext(connection) as queries:
        deliver_now(["/b/"])
    assert not [q for q in queries if q["sql"].lstrip().upper().startswith("DELETE")]
    assert Delivery.objects.filter(pk=late.pk).exists()

    monkeypatch.setattr(history, "_last_purge", history._last_purge - history.PURGE_INTERVAL)
    deliver_now(["/c/"])
    assert not Delivery.objects.filter(pk=late.pk).exists()


def test_last_accepted_matches_whole_urls_only(history_on):
    make_delivery(1, engine="bing", urls="https://www.example.com/a/\nhttps://www.example.com/ab/")
    make_delivery(2, engine="yandex", urls="https://www.example.com/a/")
    make_delivery(0.5, engine="naver", urls="https://www.example.com/a/", outcome="rejected")
    make_delivery(0.1, engine="seznam", urls="https://www.example.com/abc/")
    found = history.last_accepted(["https://www.example.com/a/"])
    assert list(found) == ["bing", "yandex"]
    assert history.last_accepted(["https://www.example.com/ab/"]).keys() == {"bing"}
    assert history.last_accepted([]) == {}


def test_history_settings_are_validated(settings):
    settings.INDEXNOW = {**settings.INDEXNOW, "HISTORY": {"ENABLED": "yes", "RETENTION_DAYS": 0}}
    assert validate() == [
        Problem(
            "indexnow.E019",
            "INDEXNOW['HISTORY']['ENABLED'] must be True or False, not 'yes'.",
        ),
        Problem(
            "indexnow.E019",
            "INDEXNOW['HISTORY']['RETENTION_DAYS'] must be a whole number of days >= 1, not 0.",
        ),
    ]


def test_the_migrations_match_the_models():
    call_command("makemigrations", "indexnow", "--check", "--dry-run", verbosity=0)


# --------------------------------------------------------------------------- whoever posts records


def test_a_synchronous_send_after_the_response_is_recorded(engine, history_on):
    from django.core.signals import request_finished
    from django.db import close_old_connections
    from django.http import HttpResponse

    from indexnow_django.units.dispatch import dispatch

    response = HttpResponse()
    dispatch(["/a/"], response=response)
    assert not Delivery.objects.exists()
    # As Django's test client does: the end of a request would close the
    # test's database connection.
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)
    [row] = Delivery.objects.all()
    assert (row.url_list, row.outcome, row.job_id) == (
        ["https://www.example.com/a/"],
        "accepted",
        "",
    )


def test_each_record_carries_the_time_of_its_flush(engine, history_on):
    from datetime import timedelta

    from indexnow_django.units.dispatch import dispatch

    before = timezone.now()
    engine.queue_replies(Reply(200, delay=0.3))
    dispatch(["/a/"])
    after = timezone.now()

    [row] = Delivery.objects.all()
    assert before - timedelta(seconds=0.01) <= row.flushed_at <= row.sent_at <= after
    assert history.flushed_at(row.batch_id) == row.flushed_at
    # A batch id that says nothing of its flush leaves the field empty.
    deliver_now(["/b/"], batch_id="by-hand")
    assert Delivery.objects.get(batch_id="by-hand").flushed_at is None


def test_the_fallback_when_redis_is_down_is_recorded(engine, history_on, indexnow_settings):
    from django.test import override_settings

    from indexnow_django.units.dispatch import dispatch
    from tests.test_dispatch import closed_queue

    indexnow_settings(DISPATCH="queue")
    with override_settings(RQ_QUEUES=closed_queue()):
        dispatch(["/a/"])
    assert engine.posted_urls() == ["https://www.example.com/a/"]
    [row] = Delivery.objects.all()
    assert (row.outcome, row.job_id) == ("accepted", "")


def test_indexnow_submit_sync_records_each_post(engine, history_on):
    from io import StringIO

    engine.queue_replies(Reply(422, body="Unprocessable: not your host"))
    with pytest.raises(CommandError):
        call_command(
            "indexnow_submit", "/a/", "/b/", "--sync", stdout=StringIO(), stderr=StringIO()
        )
    # One POST of both URLs, rejected: the command fails, and the record says why.
    [row] = Delivery.objects.all()
    assert (row.outcome, row.status, row.url_count) == ("rejected", 422, 2)
    assert "not your host" in row.answer


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_records_each_attempt_with_its_job(
    engine, history_on, indexnow_settings, start_worker, redis_conn
):
    from indexnow_django.units.dispatch import dispatch
    from tests.rqhelpers import FAST_RETRY, wait_for_count

    # The worker at the shipped window and throttle: the retry, due a second after the
    # 503, may be held back at its slot, and is still recorded as attempt 2.
    overrides = {**history_on, "DISPATCH": "queue", "RETRY": dict(FAST_RETRY)}
    indexnow_settings(**overrides)
    engine.queue_replies(Reply(503), Reply(200))
    dispatch(["/a/"])
    start_worker(overrides)
    wait_for_count(lambda: Delivery.objects.count(), 2)
    first, second = Delivery.objects.order_by("sent_at")
    assert [(r.outcome, r.status, r.attempt) for r in (first, second)] == [
        ("retry", 503, 1),
        ("accepted", 200, 2),
    ]
    assert first.batch_id == second.batch_id
    assert first.job_id and second.job_id and first.job_id != second.job_id
    assert first.queue == second.queue == "default"
    # The time of the flush travels with the batch: the retry carries the same.
    assert first.flushed_at is not None
    assert first.flushed_at == second.flushed_at
    assert first.flushed_at <= first.sent_at < second.sent_at


def test_a_look_up_by_url_is_served_by_an_index_on_postgresql():
    from indexnow_django.sending.history import with_urls

    make_delivery(urls="https://www.example.com/p/1/\nhttps://www.example.com/p/2/")
    make_delivery(urls="https://www.example.com/p/10/")
    found = with_urls(Delivery.objects.all(), ["https://www.example.com/p/1/"])
    assert [row.url_list for row in found] == [
        ["https://www.example.com/p/1/", "https://www.example.com/p/2/"]
    ]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # the table is tiny here: no scans
            cursor.execute("SET LOCAL enable_seqscan = off")
        assert "indexnow_delivery_url_hashes" in found.explain()
    else:  # no such index elsewhere: the same answer, from the URL texts
        assert "indexnow_delivery_url_hashes" not in found.explain()
