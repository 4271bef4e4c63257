"""``IndexNowMiddleware``: a request is one unit of work, under WSGI and under ASGI."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from asgiref.sync import iscoroutinefunction
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest, HttpResponse
from django.test import AsyncClient, Client, RequestFactory

from indexnow_django.middleware import IndexNowMiddleware
from tests.needs import AT_ONCE
from tests.testapp import views
from tests.testapp.models import Page, Post

# A request's flush is sent at once, in process: the engine has it when the response is done.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.urls("tests.testapp.urls"),
    pytest.mark.indexnow(**AT_ONCE, DEBOUNCE={"TTL": 0}),
]

BASE = "https://www.example.com"


@pytest.fixture
def flushes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], Any]]:
    """(URLs, response) of each call into ``dispatch.dispatch``, which still runs."""
    from indexnow_django.units import dispatch as module

    calls: list[tuple[list[str], Any]] = []
    real = module.dispatch

    def recording(urls: Any, **kwargs: Any) -> Any:
        calls.append((list(urls), kwargs.get("response")))
        return real(urls, **kwargs)

    monkeypatch.setattr(module, "dispatch", recording)
    return calls


def test_the_middleware_works_in_both_chains() -> None:
    def sync_view(request: HttpRequest) -> HttpResponse:
        return HttpResponse()

    async def async_view(request: HttpRequest) -> HttpResponse:
        return HttpResponse()

    assert IndexNowMiddleware.sync_capable and IndexNowMiddleware.async_capable
    assert not iscoroutinefunction(IndexNowMiddleware(sync_view))
    assert iscoroutinefunction(IndexNowMiddleware(async_view))


@pytest.fixture
def hello(engine: Any, flushes: list[tuple[list[str], Any]]) -> Post:
    """A published post; what its creation flushed and sent is forgotten."""
    post = Post.objects.create(title="Hello", slug="hello", status=Post.PUBLISHED)
    flushes.clear()
    engine.reset()
    return post


def test_a_request_flushes_once_with_its_response(
    engine: Any, flushes: list[tuple[list[str], Any]], hello: Post
) -> None:
    post = hello
    # The test client closes the response as a server does: the flush is done.
    response = Client().get(f"/posts/{post.pk}/save/", {"title": "Hello again"})
    assert response.status_code == 200
    assert [urls for urls, _ in flushes] == [["/posts/hello/"]]
    assert [p.urls for p in engine.posts] == [[f"{BASE}/posts/hello/"]]


def test_under_wsgi_the_flush_waits_until_the_server_has_sent_the_response(
    engine: Any, flushes: list[tuple[list[str], Any]], hello: Post
) -> None:
    post = hello
    environ = RequestFactory().get(f"/posts/{post.pk}/save/", {"title": "Hello again"}).environ
    started: list[str] = []
    body = WSGIHandler()(environ, lambda status, headers: started.append(status))
    # What a WSGI server has when it writes the response out: nothing flushed yet.
    assert started == ["200 OK"]
    assert b"".join(body)
    assert flushes == []
    assert engine.posts == []
    body.close()  # the server is done with the response
    assert [urls for urls, _ in flushes] == [["/posts/hello/"]]
    assert [p.urls for p in engine.posts] == [[f"{BASE}/posts/hello/"]]


def test_a_request_that_changes_nothing_does_not_flush(
    flushes: list[tuple[list[str], Any]],
) -> None:
    assert Client().get("/nothing/").status_code == 200
    assert flushes == []


def test_a_failing_view_still_flushes_what_it_committed(
    engine: Any, flushes: list[tuple[list[str], Any]]
) -> None:
    page = Page.objects.create(path="/committed/")
    flushes.clear()
    engine.reset()
    response = Client(raise_request_exception=False).get(f"/pages/{page.pk}/fail/")
    assert response.status_code == 500
    assert [urls for urls, _ in flushes] == [["/committed/"]]
    assert [p.urls for p in engine.posts] == [[f"{BASE}/committed/"]]


def test_a_broken_setting_never_turns_a_request_into_a_500(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    post = Post.objects.create(title="Hello", slug="hello", status=Post.PUBLISHED)
    settings.INDEXNOW = {"KEY": "x", "BASE_URL": "not a url", "DISPATCH": "carrier-pigeon"}
    with caplog.at_level(logging.ERROR, logger="indexnow_django"):
        response = Client().get(f"/posts/{post.pk}/save/", {"title": "Still saved"})
    assert response.status_code == 200
    assert Post.objects.get(pk=post.pk).title == "Still saved"
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors
    assert all(r.name.startswith("indexnow_django") for r in errors)


def test_concurrent_async_requests_each_flush_their_own_url(
    engine: Any, flushes: list[tuple[list[str], Any]]
) -> None:
    count = 20
    pages = [Page.objects.create(path=f"/page/{n}/") for n in range(count)]
    flushes.clear()
    engine.reset()

    async def run_all() -> list[Any]:
        # Every view waits here after saving, so all 20 requests are in flight,
        # each with its URL collected, before the first one flushes.
        views.BARRIER = views.Gate(count)
        client = AsyncClient()
        try:
            return await asyncio.gather(*(client.get(f"/pages/{p.pk}/async/") for p in pages))
        finally:
            views.BARRIER = None

    responses = asyncio.run(asyncio.wait_for(run_all(), timeout=60))
    assert [r.status_code for r in responses] == [200] * count
    expected = {f"/page/{n}/" for n in range(count)}
    assert len(flushes) == count
    assert all(len(urls) == 1 for urls, _ in flushes)
    assert {urls[0] for urls, _ in flushes} == expected
    # Each flush went out with the response of the request that produced it.
    by_response = {id(sent_with): urls[0] for urls, sent_with in flushes}
    assert {id(r): r.content.decode() for r in responses} == by_response
    posts = engine.wait_for_posts(count)
    assert sorted(p.urls[0] for p in posts) == sorted(f"{BASE}{u}" for u in expected)
    assert all(len(p.urls) == 1 for p in posts)


def test_a_sync_view_under_asgi_flushes_its_url(
    engine: Any, flushes: list[tuple[list[str], Any]]
) -> None:
    """Django runs the sync view in a thread; the collector still belongs to its request."""
    post = Post.objects.create(title="Hello", slug="asgi-sync", status=Post.PUBLISHED)
    flushes.clear()
    engine.reset()
    response = asyncio.run(AsyncClient().get(f"/posts/{post.pk}/save/"))
    assert response.status_code == 200
    assert flushes == [(["/posts/asgi-sync/"], response)]
    assert [p.urls for p in engine.wait_for_posts(1)] == [[f"{BASE}/posts/asgi-sync/"]]


# A real ASGI server ---------------------------------------------------------------


@pytest.mark.slow
def test_under_uvicorn_async_and_sync_views_whose_urls_need_queries_lose_nothing(
    engine: Any, tmp_path: Any
) -> None:
    """20 concurrent requests to uvicorn, half of them async views saving with ``acreate``,
    of a model whose ``urls()`` queries its tags: every request answers 200 and every
    story's URL reaches the engine (an async view's unit works its URLs out where the ORM
    may run, not in the event loop)."""
    from concurrent.futures import ThreadPoolExecutor

    import requests

    from tests.servers import serve

    count = 20
    paths = [
        f"/stories/story-{n}/new-async/" if n % 2 else f"/stories/story-{n}/new/"
        for n in range(count)
    ]
    with serve("asgi", tmp_path) as server:
        with ThreadPoolExecutor(count) as pool:
            answers = list(
                pool.map(lambda path: requests.get(f"{server.base}{path}", timeout=30), paths)
            )
        assert [a.status_code for a in answers] == [200] * count
        expected = {f"{BASE}/stories/story-{n}/" for n in range(count)}
        expected |= {f"{BASE}/stories/story-{n}/amp/" for n in range(1, count, 2)}
        posts = engine.wait_for_posts(count, timeout=30)
        log = server.output()
    assert {url for post in posts for url in post.urls} == expected, log
    assert "could not work out" not in log
    assert "SynchronousOnlyOperation" not in log
