"""``capture_submissions()``: how a site's own tests see which URLs their code submitted."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from indexnow_django import batch, submit
from indexnow_django.testing import Submission, capture_submissions
from indexnow_django.units import dispatch as dispatch_module
from tests.needs import AT_ONCE
from tests.testapp.models import Post


def publish(request: HttpRequest, pk: int) -> HttpResponse:
    """A site's own view: publishes a post and says that the home page changed too."""
    post = Post.objects.get(pk=pk)
    post.status = Post.PUBLISHED
    post.save()
    submit("/")
    return HttpResponse("published")


urlpatterns = [
    path("", include("indexnow_django.urls")),
    path("publish/<int:pk>/", publish),
]

HOME = "https://www.example.com/"
HELLO = "https://www.example.com/posts/hello/"


@pytest.mark.indexnow(**AT_ONCE)
@pytest.mark.urls("tests.test_testing")
@pytest.mark.django_db(transaction=True)
def test_a_request_is_captured_as_one_submission_and_not_sent(client, engine):
    post = Post.objects.create(title="Hello", slug="hello")  # a draft: nothing to submit

    with capture_submissions() as outbox:
        response = client.post(f"/publish/{post.pk}/")

    assert response.status_code == 200
    assert outbox.submissions == [
        Submission(urls=(HELLO, HOME), raw_urls=("/posts/hello/", "/"), force=False)
    ]
    assert outbox.urls == [HELLO, HOME]
    assert outbox.paths == ["/posts/hello/", "/"]
    assert engine.posts == []

    # The same request outside the block reaches the engine (this test sends at once,
    # in process): the capture was what kept it back.
    Post.objects.filter(pk=post.pk).update(status=Post.DRAFT)
    client.post(f"/publish/{post.pk}/")
    assert [p.urls for p in engine.wait_for_posts(1, timeout=5)] == [[HELLO, HOME]]


def test_urls_are_normalized_and_foreign_hosts_dropped_as_delivery_would():
    with capture_submissions() as outbox, batch():
        submit(["/a", "HTTPS://WWW.Example.com:443/b/#top", "https://elsewhere.example.org/x/"])

    (submission,) = outbox
    assert submission.urls == ("https://www.example.com/a", "https://www.example.com/b/")
    assert submission.raw_urls == (
        "/a",
        "HTTPS://WWW.Example.com:443/b/#top",
        "https://elsewhere.example.org/x/",
    )
    assert outbox.paths == ["/a", "/b/"]


def test_each_unit_of_work_is_one_submission_and_urls_lists_each_url_once():
    with capture_submissions() as outbox:
        with batch():
            submit(["/a/", "/b/", "/a/"])
        with batch():
            submit(["/b/", "/c/"])

    assert len(outbox) == 2
    assert outbox[0].urls == ("https://www.example.com/a/", "https://www.example.com/b/")
    assert outbox.urls == [
        "https://www.example.com/a/",
        "https://www.example.com/b/",
        "https://www.example.com/c/",
    ]
    outbox.clear()
    assert len(outbox) == 0
    assert outbox.urls == []


@pytest.mark.indexnow(**AT_ONCE)
def test_deliver_true_records_and_still_sends(engine):
    with capture_submissions(deliver=True) as outbox, batch():
        submit("/a/")

    assert outbox.urls == ["https://www.example.com/a/"]
    assert [p.json["urlList"] for p in engine.wait_for_posts(1, timeout=5)] == [
        ["https://www.example.com/a/"]
    ]


def test_flushes_from_other_threads_are_captured(engine):
    def work() -> None:
        with batch():
            submit("/from-a-thread/")

    with capture_submissions() as outbox:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join(5)

    assert outbox.urls == ["https://www.example.com/from-a-thread/"]
    assert engine.posts == []


@pytest.mark.django_db(transaction=True)
def test_urls_of_a_transaction_arrive_when_it_commits_and_never_after_a_rollback():
    with capture_submissions() as outbox:
        with pytest.raises(RuntimeError), transaction.atomic():
            submit("/rolled-back/")
            raise RuntimeError("the form save failed")
        assert len(outbox) == 0

        with transaction.atomic():
            submit("/committed/")
            assert len(outbox) == 0
        assert outbox.urls == ["https://www.example.com/committed/"]


@pytest.mark.urls("tests.test_testing")
@pytest.mark.django_db
def test_in_a_test_transaction_on_commit_callbacks_must_be_run(
    client, django_capture_on_commit_callbacks
):
    """The pattern the docs give for django.test.TestCase and pytest-django's django_db."""
    post = Post.objects.create(title="Hello", slug="hello")

    with capture_submissions() as outbox:
        client.post(f"/publish/{post.pk}/")
    # The test's own transaction never commits: nothing was flushed.
    assert outbox.urls == []

    Post.objects.filter(pk=post.pk).update(status=Post.DRAFT)
    with capture_submissions() as outbox, django_capture_on_commit_callbacks(execute=True):
        client.post(f"/publish/{post.pk}/")
    assert outbox.urls == [HELLO, HOME]


def test_force_is_recorded():
    with capture_submissions() as outbox:
        dispatch_module.dispatch(["/a/"], force=True)

    assert outbox.submissions == [
        Submission(urls=("https://www.example.com/a/",), raw_urls=("/a/",), force=True)
    ]


def test_nothing_is_captured_when_indexnow_is_disabled(indexnow_settings):
    indexnow_settings(ENABLED=False)
    with capture_submissions() as outbox, batch():
        submit("/a/")

    assert len(outbox) == 0


@pytest.mark.indexnow(**AT_ONCE)
def test_dispatch_is_restored_after_the_block_even_on_error(engine):
    original = dispatch_module.dispatch
    with pytest.raises(RuntimeError), capture_submissions():
        raise RuntimeError("boom")

    assert dispatch_module.dispatch is original
    with batch():
        submit("/after/")
    assert engine.wait_for_posts(1, timeout=5)[0].urls == ["https://www.example.com/after/"]


def test_loopback_engine_reports_each_request_with_its_reply():
    from indexnow_django.protocol.client import Engine, IndexNowClient
    from indexnow_django.testing import LoopbackEngine, Reply

    seen = []
    with LoopbackEngine(on_request=seen.append) as engine:
        engine.queue_replies(Reply(429, headers={"Retry-After": "3"}))
        client = IndexNowClient(timeout=3)
        target = Engine("loopback", engine.url)
        client.post(
            target, "www.example.com", "test-key-0123456789", ["https://www.example.com/a/"]
        )
        client.post(
            target, "www.example.com", "test-key-0123456789", ["https://www.example.com/b/"]
        )
    assert [(r.urls, r.reply.status) for r in seen] == [
        (["https://www.example.com/a/"], 429),
        (["https://www.example.com/b/"], 200),
    ]
    assert [r.reply.status for r in engine.posts] == [429, 200]


# Which capture sees a flush ------------------------------------------------------


def test_nested_captures_the_inner_one_keeps_what_it_captured():
    with capture_submissions() as outer:
        with batch():
            submit("/before/")
        with capture_submissions() as inner, batch():
            submit("/inside/")
        with batch():
            submit("/after/")

    assert inner.paths == ["/inside/"]
    assert outer.paths == ["/before/", "/after/"]


def test_nested_captures_an_inner_one_that_delivers_passes_its_flushes_out(engine):
    with capture_submissions() as outer, capture_submissions(deliver=True) as inner, batch():
        submit("/inside/")

    assert inner.paths == ["/inside/"]
    assert outer.paths == ["/inside/"]
    assert engine.posts == []  # the outer capture still keeps it back


def test_two_threads_capturing_at_once_each_see_only_their_own(engine):
    both_capturing = threading.Barrier(2, timeout=5)
    outboxes: dict[str, list[str]] = {}

    def capture(name: str) -> None:
        with capture_submissions() as outbox:
            both_capturing.wait()
            for i in range(20):
                with batch():
                    submit(f"/{name}/{i}/")
            both_capturing.wait()
        outboxes[name] = outbox.paths

    threads = [threading.Thread(target=capture, args=(name,)) for name in ("one", "two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    assert outboxes == {
        "one": [f"/one/{i}/" for i in range(20)],
        "two": [f"/two/{i}/" for i in range(20)],
    }
    assert engine.posts == []


def test_a_module_imported_after_the_capture_started_is_captured(tmp_path, monkeypatch, engine):
    (tmp_path / "late_module_for_capture.py").write_text(
        "from indexnow_django.units.dispatch import dispatch\n\n\n"
        "def flush():\n"
        "    dispatch(['/late/'])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with capture_submissions() as outbox:
        import late_module_for_capture

        late_module_for_capture.flush()

    assert outbox.paths == ["/late/"]
    assert engine.posts == []


def test_an_async_task_flushing_inside_the_block_is_captured(engine):
    import asyncio

    from asgiref.sync import sync_to_async

    def work() -> None:
        with batch():
            submit("/from-async/")

    async def main() -> None:
        await sync_to_async(work)()

    with capture_submissions() as outbox:
        asyncio.run(main())

    assert outbox.paths == ["/from-async/"]
    assert engine.posts == []
