"""URLs kept in the database while Redis cannot take jobs (``pending.py``), sent once a
worker can: Redis stopped for real, the engine answering 503, Redis back, a worker."""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest
from django.test import override_settings

from indexnow_django.sending.pending import PendingSubmission
from indexnow_django.testing import LoopbackEngine, Reply, capture_submissions
from indexnow_django.units.dispatch import dispatch
from tests import services
from tests.needs import AT_ONCE
from tests.rqhelpers import wait_until_idle
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
    from indexnow_django.sending import inprocess

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
    # No kept row and no job left that could send.
    wait_until_idle(redis_conn, lambda: not PendingSubmission.objects.exists())
    assert len(engine.posts) == 2


# Settings broken in a server that never ran the system checks -------------------------

#: Mistakes real sites make, each with the check id that names it.
BROKEN = {
    "a key read from a secrets file": ({"KEY": "test-key-0123456789\n"}, "indexnow.E004"),
    "an unknown engine": ({"ENGINES": ["bingo"]}, "indexnow.E009"),
    "a base URL without its scheme": ({"BASE_URL": "www.example.com"}, "indexnow.E007"),
}


#: The servers' log lines with their level and logger.
LEVELLED_LOG = {
    "LOGGING": {
        "formatters": {"levelled": {"format": "%(levelname)s %(name)s %(message)s"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "levelled"}},
    }
}


def wait_for_kept(timeout: float = 20) -> list[PendingSubmission]:
    deadline = time.monotonic() + timeout
    while True:
        rows = list(PendingSubmission.objects.all())
        if rows or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.worker
@pytest.mark.parametrize("broken", list(BROKEN), ids=list(BROKEN))
def test_a_save_under_a_wsgi_server_with_broken_settings_is_kept_then_sent_by_a_worker(
    broken, engine, start_worker, tmp_path
):
    """gunicorn serves the site with an invalid ``INDEXNOW`` (no system checks run there):
    the save answers 200, its URL is kept in the database as it was given with an ERROR
    naming the problem; ``indexnow_check`` fails naming it and the number of URLs kept,
    under the broken settings and under valid ones; a worker with valid settings sends it."""
    import requests

    from tests.rqhelpers import FAST_SWEEP
    from tests.servers import serve

    overrides, check_id = BROKEN[broken]
    [post] = Post.objects.bulk_create(  # no signal: nothing flushed from here
        [Post(title="Hello", slug="hello", status=Post.PUBLISHED)]
    )
    with serve("wsgi", tmp_path, overrides=overrides, settings=LEVELLED_LOG) as server:
        answer = requests.get(f"{server.base}/posts/{post.pk}/save/?title=Saved", timeout=30)
        assert answer.status_code == 200
        kept = wait_for_kept()
        # The row is written before the ERROR line that says so reaches the server's log.
        deadline = time.monotonic() + 20
        while "IndexNow kept batch=" not in (log := server.output()):
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert Post.objects.get(pk=post.pk).title == "Saved"
    assert [row.url_list for row in kept] == [["/posts/hello/"]], log
    assert check_id in kept[0].reason
    [error] = [line for line in log.splitlines() if "IndexNow kept batch=" in line]
    assert error.startswith("ERROR indexnow_django.")
    assert check_id in error and "not sent" in error

    for marked in (overrides, {}):  # the check with the server's settings, and with valid ones
        result = services.run_django(
            "indexnow_check",
            "--offline",
            INDEXNOW_TEST_OVERRIDES=json.dumps(marked),
        )
        output = result.stdout + result.stderr
        assert result.returncode != 0, output
        assert "1 URL(s) kept in the database" in output, output
        assert check_id in output, output

    start_worker({}, extra_env=FAST_SWEEP)
    [post_sent] = engine.wait_for_posts(1, timeout=30)
    assert post_sent.urls == [HELLO]
    assert PendingSubmission.objects.count() == 0


def test_without_base_url_or_a_site_the_urls_are_kept_as_given(settings, caplog):
    """``BASE_URL`` left out and no ``Site`` to give the domain: nothing can be normalized,
    so the URLs are kept as they were given, gone ones marked, with an ERROR naming why."""
    from django.contrib.sites.models import Site

    Site.objects.all().delete()
    settings.INDEXNOW = {k: v for k, v in settings.INDEXNOW.items() if k != "BASE_URL"}
    with caplog.at_level(logging.ERROR, logger="indexnow_django"):
        dispatch(["/a/", "/old-slug/", "https://www.example.com/b/"], gone=["/old-slug/"])
    [kept] = PendingSubmission.objects.all()
    assert kept.url_list == ["/a/", "/old-slug/", "https://www.example.com/b/"]
    assert kept.gone_list == ["/old-slug/"]
    assert kept.engine_list is None
    [error] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "BASE_URL" in error.getMessage() and "not sent" in error.getMessage()


@pytest.mark.indexnow(**AT_ONCE)
def test_with_no_worker_to_send_them_the_first_flush_with_valid_settings_does(
    engine, settings, monkeypatch
):
    """``DISPATCH: "sync"``: a process whose settings are valid sends, with its first flush,
    what a process with invalid ones kept (the gone URL as gone); once."""
    from indexnow_django.units import dispatch as module

    valid = settings.INDEXNOW
    settings.INDEXNOW = {**valid, "ENGINES": ["bingo"]}
    dispatch(["/kept/", "/kept-gone/"], gone=["/kept-gone/"])
    dispatch(["/kept/", "/kept-2/"])
    assert PendingSubmission.objects.count() == 2
    assert engine.posts == []

    settings.INDEXNOW = valid
    monkeypatch.setattr(module, "_kept_looked_for", None)  # a process started with them
    dispatch(["/a/"])
    [first, kept] = engine.wait_for_posts(2)
    assert first.urls == [A]
    # The two kept flushes in one POST, each URL once.
    assert sorted(kept.urls) == [
        "https://www.example.com/kept-2/",
        "https://www.example.com/kept-gone/",
        "https://www.example.com/kept/",
    ]
    assert PendingSubmission.objects.count() == 0
    dispatch(["/b/"])
    assert len(engine.wait_for_posts(3)) == 3  # only /b/: nothing kept is sent twice
    assert engine.posts[-1].urls == ["https://www.example.com/b/"]
    for thread in threading.enumerate():  # the look is done: its connection is closed
        if thread.name == "indexnow-kept":
            thread.join(10)
