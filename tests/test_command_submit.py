"""``manage.py indexnow_submit``: every input form, batching, debounce, dry run, exit codes.

What is checked is what the loopback engine received (the POST bodies) and what
the command printed; queue mode is checked through the jobs in Redis and a real
worker that sends them.
"""

from __future__ import annotations

import datetime
import io
import json
import re
import subprocess
import time
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from rq import Queue

from indexnow_django.testing import LoopbackEngine, Reply
from tests import services
from tests.needs import UNTHROTTLED
from tests.services import run_django
from tests.testapp.models import Page, Post

# What the command sends, not how it paces it: a command waiting for the throttle, and
# saying so, is in tests/test_throttle.py.
pytestmark = pytest.mark.indexnow(**UNTHROTTLED)

ROOT = Path(__file__).resolve().parent.parent
BASE = "https://www.example.com"


class Output(StringIO):
    """A command's stdout or stderr; ``tty=True`` makes it look like a terminal."""

    def __init__(self, tty: bool = False) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def submit(*args: str, stdin: str | StringIO | None = None, tty: bool = False) -> tuple[str, str]:
    """Run the command; return (stdout, stderr). ``CommandError`` propagates."""
    out, err = Output(tty), Output()
    options: dict[str, Any] = {"stdout": out, "stderr": err, "no_color": True}
    if stdin is not None:
        options["stdin"] = StringIO(stdin) if isinstance(stdin, str) else stdin
    call_command("indexnow_submit", *args, **options)
    return out.getvalue(), err.getvalue()


def summary(stdout: str) -> str:
    return stdout.rstrip().splitlines()[-1]


def url_file(tmp_path: Path, lines: list[str], name: str = "urls.txt") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- input forms


def test_urls_as_arguments_are_sent_now_with_sync(engine: LoopbackEngine) -> None:
    stdout, _ = submit("/a/", f"{BASE}/b/?page=2", "--sync")

    assert [post.json for post in engine.posts] == [
        {
            "host": "www.example.com",
            "key": "test-key-0123456789",
            "urlList": [f"{BASE}/a/", f"{BASE}/b/?page=2"],
        }
    ]
    assert f"www.example.com → 127.0.0.1:{engine.port}/indexnow: 2 URL(s) accepted (200)" in stdout
    assert summary(stdout) == (
        "2 read, 2 valid, 0 invalid, 0 duplicate(s), 0 debounced, 2 accepted, 0 rejected, 0 failed."
    )


def test_file_skips_blank_lines_and_comments_and_reports_invalid_lines(
    engine: LoopbackEngine, tmp_path: Path
) -> None:
    path = url_file(
        tmp_path,
        [
            "# pages changed by the import",
            f"{BASE}/one/",
            "",
            "ftp://www.example.com/file",
            "   /two/   ",
            "https://elsewhere.org/three/",
            "#/commented-out/",
            "/four/",
        ],
    )

    stdout, stderr = submit("--file", str(path), "--sync")

    assert engine.posted_urls() == [f"{BASE}/one/", f"{BASE}/two/", f"{BASE}/four/"]
    assert stderr.splitlines() == [
        f"{path} line 4: skipped 'ftp://www.example.com/file': scheme 'ftp' is not http or https",
        f"{path} line 6: skipped 'https://elsewhere.org/three/': host 'elsewhere.org' is not the "
        "host of BASE_URL (https://www.example.com); list every host to submit for in "
        "INDEXNOW['HOSTS']",
    ]
    assert summary(stdout) == (
        "5 read, 3 valid, 2 invalid, 0 duplicate(s), 0 debounced, 3 accepted, 0 rejected, 0 failed."
    )


def test_stdin_with_file_dash(engine: LoopbackEngine) -> None:
    stdout, _ = submit("--file", "-", "--sync", stdin="/from-stdin/\n\n# note\n/second/\n")

    assert engine.posted_urls() == [f"{BASE}/from-stdin/", f"{BASE}/second/"]
    assert "2 read, 2 valid" in summary(stdout)


def test_invalid_stdin_line_is_named_by_its_number(engine: LoopbackEngine) -> None:
    _, stderr = submit("--file", "-", "--sync", stdin="/ok/\nhttp://\n")

    assert stderr.strip() == "stdin line 2: skipped 'http://': no host"
    assert engine.posted_urls() == [f"{BASE}/ok/"]


def test_duplicates_within_a_batch_are_sent_once(engine: LoopbackEngine) -> None:
    stdout, _ = submit("/a/", f"{BASE}/a/", "HTTPS://WWW.EXAMPLE.COM:443/a/#top", "/b/", "--sync")

    assert engine.posted_urls() == [f"{BASE}/a/", f"{BASE}/b/"]
    assert "4 read, 4 valid, 0 invalid, 2 duplicate(s)" in summary(stdout)


def test_25000_urls_with_sync_go_out_in_posts_of_10000_10000_and_5000(
    engine: LoopbackEngine, tmp_path: Path
) -> None:
    path = url_file(tmp_path, [f"/item/{n}/" for n in range(25_000)])

    stdout, _ = submit("--file", str(path), "--sync")

    sizes = [len(post.urls) for post in engine.posts]
    assert sizes == [10_000, 10_000, 5_000]
    assert engine.posted_urls() == [f"{BASE}/item/{n}/" for n in range(25_000)]
    assert summary(stdout) == (
        "25000 read, 25000 valid, 0 invalid, 0 duplicate(s), 0 debounced, 25000 accepted, 0 rejected, 0 failed."
    )


def test_each_host_gets_its_own_batches(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(HOSTS=["www.example.com", "blog.example.com"], BATCH={"MAX_URLS": 2})

    submit(
        "https://blog.example.com/1/", "/a/", "https://blog.example.com/2/", "/b/", "/c/", "--sync"
    )

    assert [(post.json["host"], post.urls) for post in engine.posts] == [
        ("blog.example.com", ["https://blog.example.com/1/", "https://blog.example.com/2/"]),
        ("www.example.com", [f"{BASE}/a/", f"{BASE}/b/"]),
        ("www.example.com", [f"{BASE}/c/"]),
    ]


@pytest.mark.django_db
def test_model_submits_public_objects_only(engine: LoopbackEngine) -> None:
    now = timezone.now()
    Post.objects.bulk_create(
        [
            Post(
                title="Live",
                slug="live",
                status=Post.PUBLISHED,
                published_at=now - datetime.timedelta(days=1),
            ),
            Post(title="No date", slug="no-date", status=Post.PUBLISHED, published_at=None),
            Post(
                title="Draft",
                slug="draft",
                status=Post.DRAFT,
                published_at=now - datetime.timedelta(days=1),
            ),
            Post(
                title="Soon",
                slug="soon",
                status=Post.PUBLISHED,
                published_at=now + datetime.timedelta(hours=1),
            ),
            Post(
                title="Draft soon",
                slug="draft-soon",
                status=Post.DRAFT,
                published_at=now + datetime.timedelta(days=3),
            ),
        ]
    )  # bulk_create sends no signals: nothing is submitted by the saves themselves

    stdout, _ = submit("--model", "testapp.Post", "--sync")

    assert engine.posted_urls() == [f"{BASE}/posts/live/", f"{BASE}/posts/no-date/"]
    assert "2 read, 2 valid" in summary(stdout)


@pytest.mark.django_db
def test_model_with_default_registration(engine: LoopbackEngine) -> None:
    Page.objects.bulk_create(
        [Page(path="/about/"), Page(path="mailto:info"), Page(path="/contact/")]
    )

    stdout, stderr = submit("--model", "testapp.Page", "--sync")

    assert engine.posted_urls() == [f"{BASE}/about/", f"{BASE}/contact/"]
    page = Page.objects.get(path="mailto:info")
    assert stderr.strip() == (
        f"testapp.Page pk={page.pk}: skipped 'mailto:info': scheme 'mailto' is not http or https"
    )
    assert "3 read, 2 valid, 1 invalid" in summary(stdout)


@pytest.mark.django_db
def test_model_errors() -> None:
    with pytest.raises(
        CommandError, match=r"--model testapp\.Untracked: testapp\.Untracked is not registered"
    ):
        submit("--model", "testapp.Untracked")
    with pytest.raises(CommandError, match=r"--model blog\.Post: no such model"):
        submit("--model", "blog.Post")


@pytest.mark.django_db
def test_sitemap_submits_every_page_of_every_sitemap(engine: LoopbackEngine) -> None:
    now = timezone.now()
    Post.objects.bulk_create(
        [
            Post(title=f"P{n}", slug=f"p{n}", status=Post.PUBLISHED, published_at=now)
            for n in range(5)
        ]
        + [Post(title="Draft", slug="draft", status=Post.DRAFT)]
    )

    stdout, _ = submit("--sitemap", "tests.testapp.sitemaps.sitemaps", "--sync")

    # PostSitemap has two items per page: pages 1, 2 and 3 are all read.
    assert engine.posted_urls() == [
        f"{BASE}/posts/p0/",
        f"{BASE}/posts/p1/",
        f"{BASE}/posts/p2/",
        f"{BASE}/posts/p3/",
        f"{BASE}/posts/p4/",
        f"{BASE}/about/",
        f"{BASE}/contact/",
    ]
    assert "7 read, 7 valid" in summary(stdout)


def test_sitemap_that_is_not_a_dict() -> None:
    with pytest.raises(CommandError, match="expected a dict of sitemaps"):
        submit("--sitemap", "tests.settings.ALLOWED_HOSTS")
    with pytest.raises(CommandError, match="cannot import it"):
        submit("--sitemap", "tests.testapp.nowhere.sitemaps")


# --------------------------------------------------------------------------- dry run, debounce, force


def test_dry_run_prints_what_would_be_sent_and_sends_nothing(engine: LoopbackEngine) -> None:
    stdout, _ = submit("/a/", "/b/", "--dry-run", "--sync")

    assert engine.posts == []
    assert stdout.splitlines() == [
        f"Would send 2 URL(s) for www.example.com to 127.0.0.1:{engine.port}/indexnow",
        f"  {BASE}/a/",
        f"  {BASE}/b/",
        "2 read, 2 valid, 0 invalid, 0 duplicate(s), 0 debounced, 2 not sent (dry run).",
    ]


def test_debounced_urls_are_skipped_unless_forced(engine: LoopbackEngine) -> None:
    submit("/a/", "--sync")
    assert len(engine.posts) == 1

    stdout, _ = submit("/a/", "/b/", "--sync")
    assert engine.posts[1].urls == [f"{BASE}/b/"]
    assert "1 debounced, 1 accepted" in summary(stdout)

    dry, _ = submit("/a/", "/b/", "--dry-run")
    assert "Would send 0 URL(s) for www.example.com" in dry
    assert "(2 debounced)" in dry

    stdout, _ = submit("/a/", "/b/", "--sync", "--force")
    assert engine.posts[2].urls == [f"{BASE}/a/", f"{BASE}/b/"]
    assert "0 debounced, 2 accepted" in summary(stdout)


# --------------------------------------------------------------------------- engine answers


def test_final_rejection_under_sync_fails_the_command(engine: LoopbackEngine) -> None:
    engine.queue_replies(Reply(403, body="Key not valid"))
    out = Output()

    with pytest.raises(CommandError) as caught:
        call_command("indexnow_submit", "/a/", "--sync", stdout=out, stderr=Output(), no_color=True)

    assert str(caught.value).startswith(
        f"1 URL(s) were not accepted (1 rejected, 0 failed): 127.0.0.1:{engine.port}/indexnow answered "
        "403 (forbidden:"
    )
    assert str(caught.value).endswith(
        "Run manage.py indexnow_check to check the settings and the key file (the engine fetches "
        "the key from https://www.example.com/test….txt)."
    )
    assert (
        f"www.example.com → 127.0.0.1:{engine.port}/indexnow: 1 URL(s) rejected (403)"
        in out.getvalue()
    )
    assert summary(out.getvalue()).endswith("0 accepted, 1 rejected, 0 failed.")


def test_retryable_answer_is_retried_in_process(engine: LoopbackEngine) -> None:
    engine.queue_replies(Reply(429, headers={"Retry-After": "0"}))

    stdout, _ = submit("/a/", "--sync")

    assert [post.urls for post in engine.posts] == [[f"{BASE}/a/"], [f"{BASE}/a/"]]
    assert "1 URL(s) retry (429)" in stdout
    assert "Retrying 1 URL(s) in 0s (attempt 2 of 3)" in stdout
    assert summary(stdout).endswith("1 accepted, 0 rejected, 0 failed.")


def test_retries_exhausted_under_sync_fail_the_command(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(RETRY={"MAX_ATTEMPTS": 2, "SERVER_ERROR_DELAY": 0})
    engine.queue_replies(Reply(503), Reply(503))

    with pytest.raises(
        CommandError, match=r"\(0 rejected, 1 failed\): .* answered 503 .*after 2 attempt\(s\)"
    ):
        submit("/a/", "--sync")
    assert len(engine.posts) == 2


# --------------------------------------------------------------------------- nothing to do


def test_no_input_is_an_error() -> None:
    with pytest.raises(
        CommandError, match="Nothing to submit: give URLs, --file, --model or --sitemap"
    ):
        submit()


def test_only_invalid_input_is_an_error(engine: LoopbackEngine) -> None:
    with pytest.raises(CommandError, match=r"No valid URL to submit \(2 invalid\)"):
        submit("mailto:someone@example.com", "https://elsewhere.org/", "--sync")
    assert engine.posts == []


def test_invalid_entries_are_listed_up_to_a_hundred(engine: LoopbackEngine) -> None:
    lines = [f"mailto:user{n}" for n in range(105)] + ["/fine/"]

    stdout, stderr = submit("--file", "-", "--sync", stdin="\n".join(lines))

    listed = stderr.splitlines()
    assert len(listed) == 101
    assert listed[0] == "stdin line 1: skipped 'mailto:user0': scheme 'mailto' is not http or https"
    assert listed[99].startswith("stdin line 100: skipped 'mailto:user99'")
    assert listed[100] == "(more invalid entries are not listed; --verbosity 2 lists them all)"
    assert "106 read, 1 valid, 105 invalid" in summary(stdout)
    assert engine.posted_urls() == [f"{BASE}/fine/"]


def test_missing_file_is_an_error() -> None:
    with pytest.raises(CommandError, match=r"Cannot read /nonexistent/urls\.txt: No such file"):
        submit("--file", "/nonexistent/urls.txt")


def test_disabled_sends_nothing(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(ENABLED=False)
    out, err = Output(), Output()

    call_command("indexnow_submit", "/a/", "--sync", stdout=out, stderr=err)

    assert engine.posts == []
    assert "INDEXNOW['ENABLED'] is False: nothing is submitted." in err.getvalue()


# --------------------------------------------------------------------------- progress


def test_progress_line_only_on_a_terminal(engine: LoopbackEngine, tmp_path: Path) -> None:
    path = url_file(tmp_path, [f"/p/{n}/" for n in range(30)])

    on_tty, _ = submit("--file", str(path), "--sync", tty=True)
    piped, _ = submit("--file", str(path), "--sync", "--force")

    assert "\r\x1b[K30 read, 30 valid, 0 invalid, 30 accepted, 0 rejected, 0 failed" in on_tty
    assert "\r" not in piped
    assert summary(on_tty).replace("\x1b[K", "") == summary(piped)


# --------------------------------------------------------------------------- queue mode


@pytest.mark.worker
def test_queue_mode_makes_one_job_per_batch_and_a_worker_sends_them(
    engine: LoopbackEngine,
    indexnow_settings: Callable[..., Any],
    redis_conn: redis.Redis,
    start_worker: Callable[..., Any],
    tmp_path: Path,
) -> None:
    overrides = {"DISPATCH": "queue", "DEBOUNCE": {"CACHE": "shared", "TTL": 600}}
    indexnow_settings(**overrides)
    path = url_file(tmp_path, [f"/item/{n}/" for n in range(25_000)])

    stdout, _ = submit("--file", str(path))

    assert Queue("default", connection=redis_conn).count == 3
    assert engine.posts == []
    assert summary(stdout) == (
        "25000 read, 25000 valid, 0 invalid, 0 duplicate(s), 0 debounced, 25000 queued in 3 job(s)."
    )
    start_worker(overrides)
    posts = engine.wait_for_posts(3, timeout=30)
    assert sorted(len(post.urls) for post in posts) == [5_000, 10_000, 10_000]
    assert sorted(url for post in posts for url in post.urls) == sorted(
        f"{BASE}/item/{n}/" for n in range(25_000)
    )


def test_queue_mode_leaves_out_debounced_urls_and_passes_force_to_the_job(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any], redis_conn: redis.Redis
) -> None:
    indexnow_settings(DEBOUNCE={"CACHE": "shared", "TTL": 600})
    submit("/seen/", "--sync")  # accepted by the engine: recorded in the shared cache
    indexnow_settings(DISPATCH="queue", DEBOUNCE={"CACHE": "shared", "TTL": 600})
    queue = Queue("default", connection=redis_conn)

    stdout, _ = submit("/seen/", "/new/")
    forced, _ = submit("/seen/", "/new/", "--force")

    first, second = queue.jobs
    assert first.args == ([f"{BASE}/new/"],)
    assert first.kwargs["force"] is False
    assert second.args == ([f"{BASE}/seen/", f"{BASE}/new/"],)
    assert second.kwargs["force"] is True
    assert summary(stdout).endswith("1 debounced, 1 queued in 1 job(s).")
    assert summary(forced).endswith("0 debounced, 2 queued in 1 job(s).")


def test_queue_mode_with_redis_down_sends_now(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any], settings: Any
) -> None:
    settings.RQ_QUEUES = {"default": {"URL": f"redis://127.0.0.1:{services.free_port()}/0"}}
    indexnow_settings(DISPATCH="queue")

    stdout, stderr = submit("/a/")

    assert "The queue 'default' cannot take jobs (ConnectionError: " in stderr
    assert "sending from this process instead" in stderr
    assert engine.posted_urls() == [f"{BASE}/a/"]
    assert summary(stdout).endswith(
        "0 queued in 0 job(s), 1 sent by fallback, 1 accepted, 0 rejected, 0 failed."
    )


def test_synchronous_queue_that_ran_a_failing_job_fails_the_command(
    engine: LoopbackEngine,
    indexnow_settings: Callable[..., Any],
    settings: Any,
    redis_conn: redis.Redis,
    redis_url: str,
) -> None:
    settings.RQ_QUEUES = {"default": {"URL": f"{redis_url}/0", "ASYNC": False}}
    indexnow_settings(DISPATCH="queue")
    engine.queue_replies(Reply(403, body="Key not valid"))
    out = Output()

    with pytest.raises(CommandError) as caught:
        call_command("indexnow_submit", "/a/", stdout=out, stderr=Output(), no_color=True)

    assert engine.posted_urls() == [f"{BASE}/a/"]
    assert summary(out.getvalue()).endswith(
        "1 queued in 1 job(s), 1 failed (run at once by a synchronous queue)."
    )
    assert "failed: indexnow_django.exceptions.SubmissionRejected: " in str(caught.value)


@pytest.fixture
def read_only_redis() -> Any:
    """A real redis-server of its own that answers PING but refuses every write (no replica
    can acknowledge it): the queue looks alive and cannot take a job."""
    port = services.free_port()
    proc = subprocess.Popen(
        [
            *("redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""),
            *("--appendonly", "no", "--min-replicas-to-write", "1"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    conn = redis.Redis.from_url(url)
    for _ in range(200):
        try:
            conn.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    yield url
    conn.close()
    proc.terminate()
    proc.wait(10)


def test_queue_refusing_the_job_then_a_403_is_counted_and_fails_the_command(
    engine: LoopbackEngine,
    indexnow_settings: Callable[..., Any],
    settings: Any,
    read_only_redis: str,
) -> None:
    settings.RQ_QUEUES = {"default": {"URL": read_only_redis}}
    indexnow_settings(DISPATCH="queue", BATCH={"MAX_URLS": 2})
    engine.queue_replies(Reply(403, body="Key not valid"), Reply(403, body="Key not valid"))
    out, err = Output(), Output()

    with pytest.raises(CommandError) as caught:
        call_command("indexnow_submit", "/a/", "/b/", "/c/", stdout=out, stderr=err, no_color=True)

    # The first batch's enqueue failed: it and every later batch went out from here.
    assert err.getvalue().count("cannot take jobs") == 1
    assert "cannot take jobs (ResponseError: " in err.getvalue()
    assert "NOREPLICAS" in err.getvalue()
    assert [post.urls for post in engine.posts] == [[f"{BASE}/a/", f"{BASE}/b/"], [f"{BASE}/c/"]]
    assert summary(out.getvalue()) == (
        "3 read, 3 valid, 0 invalid, 0 duplicate(s), 0 debounced, 0 queued in 0 job(s), "
        "3 sent by fallback, 0 accepted, 3 rejected, 0 failed."
    )
    assert str(caught.value).startswith("3 URL(s) were not accepted (3 rejected, 0 failed): ")
    assert redis.Redis.from_url(read_only_redis).keys("rq:job:*") == []


def test_dry_run_with_sync_says_not_sent(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any], caplog: Any
) -> None:
    dry, _ = submit("/a/", "--sync", "--dry-run")
    indexnow_settings(DRY_RUN=True)
    dry_setting, _ = submit("/a/", "--sync")

    assert engine.posts == []
    assert summary(dry).endswith("0 debounced, 1 not sent (dry run).")
    assert (
        f"www.example.com → 127.0.0.1:{engine.port}/indexnow: 1 URL(s) not sent (dry run)"
        in dry_setting
    )
    assert summary(dry_setting).endswith(
        "0 debounced, 1 not sent (dry run), 0 accepted, 0 rejected, 0 failed."
    )
    assert f"urls={BASE}/a/" in caplog.text


def test_a_bare_word_is_not_a_url(engine: LoopbackEngine) -> None:
    with pytest.raises(CommandError, match=r"No valid URL to submit \(2 invalid\)"):
        submit("about", "www.example.com/a/", "--sync")
    assert engine.posts == []

    _, stderr = submit("about", "/about/", "--sync")
    assert stderr.splitlines() == [
        "argument 1: skipped 'about': neither an absolute URL nor a path starting with /"
    ]
    assert engine.posted_urls() == [f"{BASE}/about/"]


def test_rejected_by_one_engine_accepted_by_another_counts_as_rejected(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any]
) -> None:
    with LoopbackEngine() as second:
        second.queue_replies(Reply(422, body="not for this host"))
        indexnow_settings(ENGINES=[engine.url, second.url])
        out = Output()
        with pytest.raises(CommandError, match=r"\(2 rejected, 0 failed\)"):
            call_command("indexnow_submit", "/a/", "/b/", "--sync", stdout=out, stderr=Output())
    assert engine.posted_urls() == [f"{BASE}/a/", f"{BASE}/b/"]  # accepted there
    assert f"→ 127.0.0.1:{second.port}/indexnow: 2 URL(s) rejected (422)" in out.getvalue()
    assert summary(out.getvalue()).endswith("0 accepted, 2 rejected, 0 failed.")


def test_network_error_names_its_class(indexnow_settings: Callable[..., Any], caplog: Any) -> None:
    port = services.free_port()
    indexnow_settings(ENGINES=[f"http://127.0.0.1:{port}/indexnow"], RETRY={"MAX_ATTEMPTS": 1})
    out = Output()
    with pytest.raises(CommandError, match=r"network error \(ConnectionError\)"):
        call_command("indexnow_submit", "/a/", "--sync", stdout=out, stderr=Output())
    assert "1 URL(s) retry (ConnectionError)" in out.getvalue()
    assert summary(out.getvalue()).endswith("0 accepted, 0 rejected, 1 failed.")
    assert re.search(
        rf"IndexNow POST batch=\w+ engine=127.0.0.1:{port}/indexnow host=www.example.com count=1 "
        r"status=- outcome=retry error=ConnectionError$",
        caplog.text,
        re.MULTILINE,
    )


def test_debounced_urls_are_logged_per_engine(engine: LoopbackEngine, caplog: Any) -> None:
    submit("/a/", "/b/", "--sync")
    caplog.clear()

    submit("/a/", "/b/", "/c/", "--sync")

    assert engine.posts[1].urls == [f"{BASE}/c/"]
    assert re.search(
        rf"IndexNow debounced batch=\w+ engine=127.0.0.1:{engine.port}/indexnow count=2$",
        caplog.text,
        re.MULTILINE,
    )


def test_unparseable_retry_after_is_retried_after_the_formula(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(RETRY={"BASE_DELAY": 0.2})
    engine.queue_replies(Reply(429, headers={"Retry-After": "²"}))

    stdout, _ = submit("/a/", "--sync")

    assert len(engine.posts) == 2
    assert "Retrying 1 URL(s) in 0.2s (attempt 2 of 3)" in stdout
    assert summary(stdout).endswith("1 accepted, 0 rejected, 0 failed.")


# --------------------------------------------------------------------------- bad input in files


def test_binary_file_submits_nothing(engine: LoopbackEngine, tmp_path: Path) -> None:
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 40)

    with pytest.raises(CommandError, match=r"image\.png is not a text file \(it holds NUL bytes\)"):
        submit("/a/", "--file", str(path), "--sync")
    assert engine.posts == []


def test_file_is_decoded_strictly_with_its_bom_dropped(
    engine: LoopbackEngine, tmp_path: Path
) -> None:
    path = tmp_path / "urls.txt"
    path.write_bytes(
        b"\xef\xbb\xbf/first/\r\n"
        + "/caf\u00e9-latin1/".encode("latin-1")
        + b"\n/ok caf\xc3\xa9/\n/esc\x1b[31m/\n"
        + "/\u00fcber/".encode()
    )

    stdout, stderr = submit("--file", str(path), "--sync")

    assert engine.posted_urls() == [
        f"{BASE}/first/",
        f"{BASE}/ok%20caf%C3%A9/",
        f"{BASE}/%C3%BCber/",
    ]
    assert stderr.splitlines() == [
        f"{path} line 2: skipped: not UTF-8 (byte 0xe9 at position 5)",
        f"{path} line 4: skipped '/esc\\x1b[31m/': contains the control character U+001B at "
        "position 5",
    ]
    assert "5 read, 3 valid, 2 invalid" in summary(stdout)


def test_huge_line_is_skipped_and_echoed_short(engine: LoopbackEngine, tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_bytes(b"/a/\n/" + b"x" * 10_000_000 + b"\n/b/\nmailto:" + b"y" * 5000 + b"\n")

    stdout, stderr = submit("--file", str(path), "--sync")

    assert engine.posted_urls() == [f"{BASE}/a/", f"{BASE}/b/"]
    assert stderr.splitlines() == [
        f"{path} line 2: skipped: longer than 2048 characters",
        f"{path} line 4: skipped 'mailto:{'y' * 73}…': scheme 'mailto' is not http or https",
    ]
    assert "4 read, 2 valid, 2 invalid" in summary(stdout)


def test_stdin_bytes_are_decoded_strictly_too(engine: LoopbackEngine) -> None:
    class Stdin(StringIO):
        buffer = io.BytesIO(b"\xef\xbb\xbf/one/\n\xff\xfe/two/\n/three/")

    _, stderr = submit("--file", "-", "--sync", stdin=Stdin())  # type: ignore[arg-type]

    assert engine.posted_urls() == [f"{BASE}/one/", f"{BASE}/three/"]
    assert stderr.strip() == "stdin line 2: skipped: not UTF-8 (byte 0xff at position 1)"


# --------------------------------------------------------------------------- exit codes


def run_command(*args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """``manage.py indexnow_submit`` in a process of its own, with the test settings."""
    variables = {"INDEXNOW_TEST_OVERRIDES": "{}", **env}
    return run_django("indexnow_submit", "--no-color", *args, stdin=stdin, **variables)


@pytest.mark.slow
def test_exit_codes_of_the_command_line(engine: LoopbackEngine) -> None:
    ok = run_command("--file", "-", "--sync", stdin="/cli/\n")
    nothing_valid = run_command("--file", "-", "--sync", stdin="mailto:someone\n")
    engine.queue_replies(Reply(422, body=json.dumps({"message": "URLs do not belong to the host"})))
    rejected = run_command("/cli-2/", "--sync")

    assert ok.returncode == 0, ok.stderr
    assert nothing_valid.returncode == 1
    assert "stdin line 1: skipped 'mailto:someone'" in nothing_valid.stderr
    assert "CommandError: No valid URL to submit (1 invalid)." in nothing_valid.stderr
    assert rejected.returncode == 1
    assert "answered 422" in rejected.stderr


def test_exit_code_of_a_403_sent_now(engine: LoopbackEngine) -> None:
    engine.queue_replies(Reply(403, body="Key not valid"))

    run = run_command("/a/", "/b/", "--sync")

    assert run.returncode == 1
    assert run.stdout.splitlines()[-1] == (
        "2 read, 2 valid, 0 invalid, 0 duplicate(s), 0 debounced, 0 accepted, 2 rejected, 0 failed."
    )
    assert "CommandError: 2 URL(s) were not accepted (2 rejected, 0 failed): " in run.stderr


def test_exit_code_of_a_403_sent_by_fallback_when_redis_is_down(engine: LoopbackEngine) -> None:
    """Queue mode, nothing listening where the queue's Redis should be, and the engine
    answering 403: the command says the URLs were sent by fallback and rejected."""
    engine.queue_replies(Reply(403, body="Key not valid"))

    run = run_command(
        "/a/",
        REDIS_URL=f"redis://127.0.0.1:{services.free_port()}",
        INDEXNOW_TEST_OVERRIDES=json.dumps({"DISPATCH": "queue"}),
    )

    assert run.returncode == 1, run.stderr
    assert engine.posted_urls() == [f"{BASE}/a/"]
    assert "The queue 'default' cannot take jobs (ConnectionError: " in run.stderr
    assert run.stdout.splitlines()[-1] == (
        "1 read, 1 valid, 0 invalid, 0 duplicate(s), 0 debounced, 0 queued in 0 job(s), "
        "1 sent by fallback, 0 accepted, 1 rejected, 0 failed."
    )
    assert "CommandError: 1 URL(s) were not accepted (1 rejected, 0 failed): " in run.stderr


def test_exit_code_of_a_binary_file(engine: LoopbackEngine, tmp_path: Path) -> None:
    path = tmp_path / "archive.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 100)

    run = run_command("--file", str(path), "--sync")

    assert run.returncode == 1
    assert engine.posts == []
    assert "archive.gz is not a text file (it holds NUL bytes): nothing was submitted" in run.stderr


# --------------------------------------------------------------------------- --pk


@pytest.mark.django_db
def test_pk_submits_just_those_objects_and_reports_the_others(engine: LoopbackEngine) -> None:
    now = timezone.now()
    live, _other, draft = Post.objects.bulk_create(
        [
            Post(title="Live", slug="live", status=Post.PUBLISHED, published_at=now),
            Post(title="Other", slug="other", status=Post.PUBLISHED, published_at=now),
            Post(title="Draft", slug="draft", status=Post.DRAFT),
        ]
    )
    soon = Post.objects.create(
        title="Soon",
        slug="soon",
        status=Post.PUBLISHED,
        published_at=now + datetime.timedelta(days=1),
    )

    stdout, stderr = submit(
        "--model",
        "testapp.Post",
        *("--pk", str(live.pk), "--pk", str(draft.pk), "--pk", str(soon.pk), "--pk", "999"),
        "--sync",
    )

    assert engine.posted_urls() == [f"{BASE}/posts/live/"]
    assert stderr.splitlines() == [
        f"testapp.Post pk={draft.pk}: skipped: not public: is_published() is false",
        f"testapp.Post pk={soon.pk}: skipped: not public yet: published_at is in the future",
        "testapp.Post pk=999: skipped: no such object",
    ]
    assert summary(stdout) == (
        "4 read, 1 valid, 3 invalid, 0 duplicate(s), 0 debounced, 1 accepted, 0 rejected, 0 failed."
    )


@pytest.mark.django_db
def test_pk_needs_exactly_one_model_and_a_primary_key_of_it(engine: LoopbackEngine) -> None:
    with pytest.raises(CommandError, match=r"--pk goes with exactly one --model"):
        submit("--pk", "1", "/a/")
    with pytest.raises(CommandError, match=r"--pk goes with exactly one --model"):
        submit("--model", "testapp.Post", "--model", "testapp.Page", "--pk", "1")
    with pytest.raises(CommandError, match=r"--pk abc: not a primary key of testapp\.Post"):
        submit("--model", "testapp.Post", "--pk", "abc")
    assert engine.posts == []


# --------------------------------------------------------------------------- --json


def test_json_gives_counts_and_each_engines_answers(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(RETRY={"SERVER_ERROR_DELAY": 0})
    engine.queue_replies(Reply(503, body="busy"))

    stdout, _ = submit("/a/", "/b/", "nope", "--sync", "--json")

    document = json.loads(stdout)
    assert document["mode"] == "sync"
    assert document["ok"] is True
    assert document["counts"] == {
        "read": 3,
        "valid": 2,
        "invalid": 1,
        "duplicates": 0,
        "debounced": 0,
        "queued": 0,
        "jobs": 0,
        "fallback": 0,
        "accepted": 2,
        "rejected": 0,
        "failed": 0,
        "not_sent": 0,
        "skipped": 0,
    }
    [(name, answers)] = document["engines"].items()
    assert name == f"127.0.0.1:{engine.port}/indexnow"
    assert answers["posts"] == 2
    assert [(a["outcome"], a["status"], a["attempt"], a["count"]) for a in answers["answers"]] == [
        ("retry", 503, 1, 2),
        ("accepted", 200, 2, 2),
    ]
    assert document["skipped"] == [
        {"where": "argument 3", "entry": "nope", "reason": document["skipped"][0]["reason"]}
    ]


def test_json_keeps_the_exit_code_of_a_rejection(engine: LoopbackEngine) -> None:
    engine.queue_replies(Reply(403, body="Key not valid"))
    out = Output()
    with pytest.raises(CommandError, match=r"1 URL\(s\) were not accepted \(1 rejected"):
        call_command("indexnow_submit", "/a/", "--sync", "--json", stdout=out, stderr=Output())

    document = json.loads(out.getvalue())
    assert document["ok"] is False
    assert document["counts"]["rejected"] == 1
    assert "403" in document["failures"][0]
    assert "indexnow_check" in document["hint"]


def test_json_in_queue_mode_lists_the_jobs(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any], redis_conn: redis.Redis
) -> None:
    indexnow_settings(DISPATCH="queue")

    stdout, _ = submit("/a/", "/b/", "--json")

    document = json.loads(stdout)
    assert document["mode"] == "queue"
    [job] = document["jobs"]
    assert job["count"] == 2 and job["host"] == "www.example.com"
    assert Queue(connection=redis_conn).job_ids == [job["id"]]
    assert engine.posts == []


def test_json_of_a_dry_run_lists_what_would_be_sent(engine: LoopbackEngine) -> None:
    stdout, _ = submit("/a/", "--dry-run", "--json")

    document = json.loads(stdout)
    assert document["mode"] == "dry_run"
    assert document["would_send"] == [
        {"host": "www.example.com", "count": 1, "debounced": 0, "urls": [f"{BASE}/a/"]}
    ]
    assert engine.posts == []


# --------------------------------------------------------------------------- --changed-since


def dated_posts(*ages_in_days: float) -> list[Post]:
    now = timezone.now()
    return Post.objects.bulk_create(
        Post(
            title=f"P{n}",
            slug=f"p{n}",
            status=Post.PUBLISHED,
            published_at=now - datetime.timedelta(days=age),
        )
        for n, age in enumerate(ages_in_days)
    )


@pytest.mark.django_db
def test_changed_since_a_duration_or_a_date_keeps_newer_lastmods(engine: LoopbackEngine) -> None:
    dated_posts(0.5, 3, 10)

    stdout, _ = submit(
        "--sitemap", "tests.testapp.sitemaps.dated", "--changed-since", "1d", "--sync"
    )

    assert engine.posted_urls() == [f"{BASE}/posts/p0/"]
    assert summary(stdout).startswith("2 unchanged, 1 read, 1 valid")

    engine.reset()
    since = (timezone.localdate() - datetime.timedelta(days=5)).isoformat()
    submit(
        "--sitemap", "tests.testapp.sitemaps.dated", "--changed-since", since, "--sync", "--force"
    )
    assert engine.posted_urls() == [f"{BASE}/posts/p0/", f"{BASE}/posts/p1/"]


@pytest.mark.django_db
def test_changed_since_last_accepted_reads_the_history(
    engine: LoopbackEngine, history_on: Any
) -> None:
    from tests.conftest import make_delivery

    _p0, p1, _p2 = dated_posts(3, 3, 3)
    submit("--sitemap", "tests.testapp.sitemaps.dated", "--sync")  # all three accepted now
    assert len(engine.posted_urls()) == 3
    engine.reset()
    # Changed since by a program that sends no signal; and one never accepted.
    Post.objects.filter(pk=p1.pk).update(published_at=timezone.now())
    [p3] = dated_posts(30)
    Post.objects.filter(pk=p3.pk).update(slug="p3")
    # A rejection is no acceptance.
    make_delivery(outcome="rejected", status=403, urls=f"{BASE}/posts/p3/")

    stdout, _ = submit(
        "--sitemap",
        "tests.testapp.sitemaps.dated",
        "--changed-since",
        "last-accepted",
        "--sync",
        "--force",  # the first send was a moment ago, within DEBOUNCE["TTL"]
    )

    assert engine.posted_urls() == [f"{BASE}/posts/p1/", f"{BASE}/posts/p3/"]
    assert summary(stdout).startswith("2 unchanged, 2 read, 2 valid")


@pytest.mark.django_db
def test_changed_since_errors(engine: LoopbackEngine, indexnow_settings: Any) -> None:
    with pytest.raises(CommandError, match="--changed-since goes with --sitemap"):
        submit("/a/", "--changed-since", "1d")
    with pytest.raises(CommandError, match=r"--changed-since yesterday: give a duration"):
        submit("--sitemap", "tests.testapp.sitemaps.dated", "--changed-since", "yesterday")
    indexnow_settings(HISTORY={"ENABLED": False})
    with pytest.raises(CommandError, match=r"last-accepted reads the history"):
        submit("--sitemap", "tests.testapp.sitemaps.dated", "--changed-since", "last-accepted")
    assert engine.posts == []
