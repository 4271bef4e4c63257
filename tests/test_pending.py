"""URLs kept in the database while Redis cannot take jobs (``pending.py``), sent once a
worker can: Redis stopped for real, the engine answering 503, Redis back, a worker."""

from __future__ import annotations

import logging
import time

import pytest
from django.test import override_settings

from indexnow_django.delivery.pending import PendingSubmission
from indexnow_django.dispatch import dispatch
from indexnow_django.testing import LoopbackEngine, Reply, capture_submissions
from tests import services
from tests.needs import AT_ONCE
from tests.testapp.models import Post

pytestmark = pytest.mark.django_db(transaction=True)

A = "https://www.example.com/a/"
HELLO = "https://www.example.com/posts/hello/"


def closed_queue() -> dict[str, dict[str, str]]:
    return {"default": {"URL": f"redis://127.0.0.1:{services.free_port()}/0"}}


def test_what_may_pass_is_kept_per_engine_and_final_rejections_are_not(
    engine, indexnow_settings, caplog
):
    with LoopbackEngine() as second, LoopbackEngine() as third:
        indexnow_settings(DISPATCH="queue", ENGINES=[engine.url, second.url, third.url])
        second.queue_replies(Reply(429))
        third.queue_replies(Reply(403))
        with (
            override_settings(RQ_QUEUES=closed_queue()),
            caplog.at_level(logging.WARNING, logger="indexnow_django"),
        ):
            dispatch(["/a/"])

    [kept] = PendingSubmission.objects.all()
    assert kept.url_list == [A]
    assert kept.engine_list == [second.url]
    assert kept.reason == f"{second.url.split('://')[1]} answered 429"
    assert "kept for a worker" in caplog.text
    assert f"IndexNow kept batch={kept.batch_id} count=1 engines={second.url}" in caplog.text


def test_a_send_that_fails_altogether_is_kept_for_every_engine(
    engine, indexnow_settings, monkeypatch
):
    from indexnow_django.delivery import inprocess

    def broken(*args, **kwargs):
        raise RuntimeError("no network")

    monkeypatch.setattr(inprocess, "deliver_now", broken)
    indexnow_settings(DISPATCH="queue")
    with override_settings(RQ_QUEUES=closed_queue()):
        dispatch(["/a/"], force=True, gone=["/a/"])

    [kept] = PendingSubmission.objects.all()
    assert (kept.url_list, kept.gone_list, kept.engine_list, kept.force) == ([A], [A], None, True)
    assert kept.reason == "the send failed: RuntimeError: no network"


@pytest.mark.indexnow(**AT_ONCE)
def test_sync_dispatch_keeps_nothing(engine, indexnow_settings):
    engine.queue_replies(Reply(503))
    dispatch(["/a/"])
    assert len(engine.posts) == 1
    assert not PendingSubmission.objects.exists()


@pytest.mark.worker
@pytest.mark.urls("tests.testapp.urls")
def test_redis_stopped_while_the_engine_answers_503_then_a_worker_sends_them(
    client, engine, indexnow_settings, start_worker, redis_conn
):
    # The throttle's slots in the cache the web process and the worker share, as
    # indexnow.W002 asks of a site with workers.
    overrides = {"DISPATCH": "queue", "DEBOUNCE": {"CACHE": "shared"}}
    indexnow_settings(**overrides)
    with capture_submissions():
        post = Post.objects.create(title="Hello", slug="hello", status=Post.PUBLISHED)
    engine.default = Reply(503)
    redis_server = services.suite_redis()

    redis_server.stop()
    try:
        response = client.get(f"/posts/{post.pk}/save/")
        assert response.status_code == 200
        assert [(p.urls, p.reply.status) for p in engine.posts] == [([HELLO], 503)]
        [kept] = PendingSubmission.objects.all()
        assert kept.url_list == [HELLO]
    finally:
        redis_server.start()
    engine.default = Reply(200)

    start_worker(overrides, with_scheduler=False)
    posts = engine.wait_for_posts(2, timeout=30)
    assert [(p.urls, p.reply.status) for p in posts] == [([HELLO], 503), ([HELLO], 200)]
    deadline = time.monotonic() + 10
    while PendingSubmission.objects.exists():
        assert time.monotonic() < deadline, "the kept row was not removed"
        time.sleep(0.05)
    time.sleep(1)
    assert len(engine.posts) == 2
