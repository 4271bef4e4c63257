"""The preflight: public URLs rendered through the site before they are sent; the pages that
say they should not be indexed are skipped, recorded, counted and explained."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from indexnow_django.models import Delivery
from indexnow_django.sending.preflight import _says_noindex, reason_to_skip
from indexnow_django.testing import LoopbackEngine
from indexnow_django.units.dispatch import dispatch
from tests.needs import AT_ONCE, ONE_JOB
from tests.testapp.models import Post
from tests.urls_preflight import RENDERED

# The flushes here are sent at once, in process, unless a test says otherwise.
pytestmark = [pytest.mark.django_db, pytest.mark.indexnow(**AT_ONCE)]

BASE = "https://www.example.com"
SLUGS = ["plain", "noindex-meta", "noindex-header", "canonical-copy", "broken", "moved"]
SKIPPED = {
    f"{BASE}/posts/noindex-meta/": "noindex",
    f"{BASE}/posts/noindex-header/": "noindex",
    f"{BASE}/posts/canonical-copy/": f"canonical {BASE}/posts/the-original/",
    f"{BASE}/posts/broken/": "status 500",
    f"{BASE}/posts/moved/": "status 301",
    f"{BASE}/posts/draft/": "status 404",
}
PREFLIGHT_SITE = {"ROOT_URLCONF": "tests.urls_preflight"}


@pytest.fixture
def site(settings: Any, indexnow_settings: Callable[..., Any]) -> Iterator[dict[str, Any]]:
    """Preflight on, the posts' pages in the URLconf, nothing rendered yet."""
    settings.ROOT_URLCONF = PREFLIGHT_SITE["ROOT_URLCONF"]
    overrides = {"PREFLIGHT": {"ENABLED": True}}
    indexnow_settings(**overrides)
    RENDERED.clear()
    yield overrides
    RENDERED.clear()


def make_posts(*slugs: str, status: str = Post.PUBLISHED) -> list[Post]:
    return [Post.objects.create(title=slug.title(), slug=slug, status=status) for slug in slugs]


def skipped_in_history() -> dict[str, str]:
    return {
        url: row.answer
        for row in Delivery.objects.filter(outcome="skipped")
        for url in row.url_list
    }


def test_pages_that_say_not_to_index_them_are_skipped_and_the_plain_one_is_sent(
    engine: LoopbackEngine, history_on: Any, site: Any, caplog: pytest.LogCaptureFixture
) -> None:
    make_posts(*SLUGS)
    make_posts("draft", status=Post.DRAFT)

    with caplog.at_level("INFO", logger="indexnow_django"):
        dispatch([f"/posts/{slug}/" for slug in [*SLUGS, "draft"]])

    [post] = engine.posts
    assert post.urls == [f"{BASE}/posts/plain/"]
    assert skipped_in_history() == SKIPPED
    rows = Delivery.objects.filter(outcome="skipped")
    assert {(row.engine, row.host, row.status) for row in rows} == {
        ("preflight", "www.example.com", None)
    }
    assert "IndexNow preflight skipped batch=" in caplog.text
    assert f"url={BASE}/posts/noindex-header/ reason=noindex" in caplog.text


def test_a_gone_url_is_never_rendered_and_is_sent(
    engine: LoopbackEngine, history_on: Any, site: Any
) -> None:
    make_posts("plain", "broken")

    dispatch(["/posts/plain/", "/posts/broken/"], gone=["/posts/broken/"])

    assert RENDERED == {"/posts/plain/": 1}
    assert sorted(engine.posted_urls()) == [f"{BASE}/posts/broken/", f"{BASE}/posts/plain/"]
    assert not Delivery.objects.filter(outcome="skipped").exists()


def test_off_by_default_nothing_is_rendered(
    engine: LoopbackEngine, settings: Any, history_on: Any
) -> None:
    settings.ROOT_URLCONF = PREFLIGHT_SITE["ROOT_URLCONF"]
    RENDERED.clear()
    make_posts("noindex-meta")

    dispatch(["/posts/noindex-meta/"])

    assert RENDERED == {}
    assert engine.posted_urls() == [f"{BASE}/posts/noindex-meta/"]


def test_nothing_to_send_when_every_url_is_skipped(
    engine: LoopbackEngine, history_on: Any, site: Any
) -> None:
    make_posts("noindex-meta")

    dispatch(["/posts/noindex-meta/"])

    assert engine.posts == []
    assert skipped_in_history() == {f"{BASE}/posts/noindex-meta/": "noindex"}


def test_indexnow_submit_model_counts_the_skipped_urls(
    engine: LoopbackEngine, history_on: Any, site: Any
) -> None:
    make_posts("plain", "noindex-meta", "broken")
    out = StringIO()

    call_command("indexnow_submit", "--model", "testapp.Post", "--sync", stdout=out)

    assert (
        out.getvalue()
        .strip()
        .endswith(
            "3 read, 3 valid, 0 invalid, 0 duplicate(s), 0 debounced, "
            "2 skipped by the preflight, 1 accepted, 0 rejected, 0 failed."
        )
    )
    assert engine.posted_urls() == [f"{BASE}/posts/plain/"]

    out = StringIO()
    call_command(
        "indexnow_submit", "--model", "testapp.Post", "--sync", "--json", "--force", stdout=out
    )
    assert json.loads(out.getvalue())["counts"]["skipped"] == 2


def test_indexnow_explain_shows_the_skipped_url_and_its_reason(
    engine: LoopbackEngine, history_on: Any, site: Any
) -> None:
    [post] = make_posts("canonical-copy")
    dispatch(["/posts/canonical-copy/"])
    out = StringIO()

    call_command("indexnow_explain", "testapp.Post", str(post.pk), stdout=out)

    assert (
        f"www.example.com: skipped by the preflight (canonical {BASE}/posts/the-original/), batch "
    ) in out.getvalue()


def test_the_page_is_rendered_for_its_host_and_scheme(site: Any) -> None:
    make_posts("plain")

    # The canonical link names the URL as the request saw it: same scheme and host.
    assert reason_to_skip(f"{BASE}/posts/plain/") is None
    assert reason_to_skip("http://blog.example.com:8000/posts/plain/") is None
    assert reason_to_skip(f"{BASE}/posts/plain/?page=2") is None
    assert reason_to_skip(f"{BASE}/no/such/page/") == "status 404"


@pytest.mark.parametrize(
    ("value", "noindex"),
    [
        ("noindex", True),
        ("NoIndex, nofollow", True),
        ("none", True),
        ("nofollow", False),
        ("googlebot: noindex", False),
        ("bingbot: noindex", True),
        ("unavailable_after: 25 Jun 2030 15:00:00 PST", False),
        ("googlebot: nofollow, bingbot: noindex", True),
        ("noarchive, googlebot: noindex", False),
    ],
)
def test_x_robots_tag_values(value: str, noindex: bool) -> None:
    assert _says_noindex(value) is noindex


def test_the_admins_chart_counts_the_skipped_urls(
    client: Any, engine: LoopbackEngine, history_on: Any, site: Any
) -> None:
    import re

    from tests.test_admin import LIST, staff

    staff(client, "indexnow.view_delivery")
    assert "skipped:" not in " ".join(
        re.sub(r"<[^>]+>", " ", client.get(LIST).content.decode()).split()
    )
    make_posts("plain", "noindex-meta", "noindex-header")
    dispatch(["/posts/plain/", "/posts/noindex-meta/", "/posts/noindex-header/"])

    text = " ".join(re.sub(r"<[^>]+>", " ", client.get(LIST).content.decode()).split())
    assert "accepted: 1" in text
    assert "skipped: 2" in text


def test_an_https_page_of_a_site_behind_a_proxy_is_not_sent_to_itself(
    site: Any, settings: Any
) -> None:
    settings.MIDDLEWARE = ["django.middleware.security.SecurityMiddleware", *settings.MIDDLEWARE]
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    make_posts("plain")

    assert reason_to_skip(f"{BASE}/posts/plain/") is None
    # The same site's http URL is redirected, as a visitor's would be.
    assert reason_to_skip("http://www.example.com/posts/plain/") == "status 301"


def test_a_retry_sends_what_the_first_attempt_screened_without_rendering_it_again(
    engine: LoopbackEngine, history_on: Any, site: Any
) -> None:
    from indexnow_django.sending.send import deliver_now

    make_posts("plain")

    report = deliver_now(["/posts/plain/"], batch_id="again", attempt=2)

    assert RENDERED == {}
    assert report.skipped == []
    assert engine.posted_urls() == [f"{BASE}/posts/plain/"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_renders_the_pages_of_a_flush_and_sends_only_the_plain_one(
    engine: LoopbackEngine,
    history_on: dict[str, Any],
    indexnow_settings: Callable[..., Any],
    settings: Any,
    start_worker: Callable[..., Any],
    redis_conn: Any,
) -> None:
    import indexnow_django
    from tests.rqhelpers import finished_ids, wait_for_count

    settings.ROOT_URLCONF = PREFLIGHT_SITE["ROOT_URLCONF"]
    overrides = {
        **history_on,
        **ONE_JOB,  # the flush's own job
        "PREFLIGHT": {"ENABLED": True},
    }
    indexnow_settings(**overrides)
    # One flush: the saves of a unit of work.
    with indexnow_django.batch():
        make_posts(*SLUGS)
    worker = start_worker(
        overrides, extra_env={"INDEXNOW_TEST_SETTINGS": json.dumps(PREFLIGHT_SITE)}
    )
    wait_for_count(lambda: len(finished_ids(redis_conn)), 1, timeout=60)

    [post] = engine.posts
    assert post.urls == [f"{BASE}/posts/plain/"]
    assert skipped_in_history() == {
        url: reason for url, reason in SKIPPED.items() if "draft" not in url
    }
    [flush] = {row.batch_id for row in Delivery.objects.all()}
    assert (
        f"IndexNow preflight skipped batch={flush} url={BASE}/posts/broken/ reason=status 500"
        in (worker.output())
    )
