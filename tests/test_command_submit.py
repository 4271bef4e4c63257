"""``manage.py indexnow_submit``: every input form, batching, debounce, dry run, exit codes.

What is checked is what the loopback engine received (the POST bodies) and what
the command printed; queue mode is checked through the jobs in Redis and a real
worker that sends them.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
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
from tests.testapp.models import Page, Post

ROOT = Path(__file__).resolve().parent.parent
BASE = "https://www.example.com"


class Output(StringIO):
    """A command's stdout or stderr; ``tty=True`` makes it look like a terminal."""

    def __init__(self, tty: bool = False) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def submit(*args: str, stdin: str | None = None, tty: bool = False) -> tuple[str, str]:
    """Run the command; return (stdout, stderr). ``CommandError`` propagates."""
    out, err = Output(tty), Output()
    options: dict[str, Any] = {"stdout": out, "stderr": err, "no_color": True}
    if stdin is not None:
        options["stdin"] = StringIO(stdin)
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
    assert f"www.example.com → 127.0.0.1:{engine.port}: 2 URL(s) accepted (200)" in stdout
    assert summary(stdout) == (
        "2 read, 2 valid, 0 invalid, 0 duplicate(s), 0 debounced, 2 sent, 0 failed."
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
        f"{path} line 6: skipped 'https://elsewhere.org/three/': host 'elsewhere.org' is not in "
        "INDEXNOW['HOSTS']",
    ]
    assert summary(stdout) == (
        "5 read, 3 valid, 2 invalid, 0 duplicate(s), 0 debounced, 3 sent, 0 failed."
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
        "25000 read, 25000 valid, 0 invalid, 0 duplicate(s), 0 debounced, 25000 sent, 0 failed."
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
        f"Would send batch 1: 2 URL(s) for www.example.com to 127.0.0.1:{engine.port}",
        f"  {BASE}/a/",
        f"  {BASE}/b/",
        "2 read, 2 valid, 0 invalid, 0 duplicate(s), 0 debounced, 2 would be sent, 0 failed.",
    ]


def test_debounced_urls_are_skipped_unless_forced(engine: LoopbackEngine) -> None:
    submit("/a/", "--sync")
    assert len(engine.posts) == 1

    stdout, _ = submit("/a/", "/b/", "--sync")
    assert engine.posts[1].urls == [f"{BASE}/b/"]
    assert "1 debounced, 1 sent" in summary(stdout)

    dry, _ = submit("/a/", "/b/", "--dry-run")
    assert "Would send batch 1: 0 URL(s) for www.example.com" in dry
    assert "(2 debounced)" in dry

    stdout, _ = submit("/a/", "/b/", "--sync", "--force")
    assert engine.posts[2].urls == [f"{BASE}/a/", f"{BASE}/b/"]
    assert "0 debounced, 2 sent" in summary(stdout)


# --------------------------------------------------------------------------- engine answers


def test_final_rejection_under_sync_fails_the_command(engine: LoopbackEngine) -> None:
    engine.queue_replies(Reply(403, body="Key not valid"))
    out = Output()

    with pytest.raises(CommandError) as caught:
        call_command("indexnow_submit", "/a/", "--sync", stdout=out, stderr=Output(), no_color=True)

    assert str(caught.value).startswith(
        f"1 URL(s) were not accepted: 127.0.0.1:{engine.port} answered 403 (forbidden:"
    )
    assert str(caught.value).endswith(
        "Run manage.py indexnow_check to check the settings and the key file (the engine fetches "
        "the key from https://www.example.com/test-key-0123456789.txt)."
    )
    assert f"www.example.com → 127.0.0.1:{engine.port}: 1 URL(s) rejected (403)" in out.getvalue()
    assert summary(out.getvalue()).endswith("0 sent, 1 failed.")


def test_retryable_answer_is_retried_in_process(engine: LoopbackEngine) -> None:
    engine.queue_replies(Reply(429, headers={"Retry-After": "0"}))

    stdout, _ = submit("/a/", "--sync")

    assert [post.urls for post in engine.posts] == [[f"{BASE}/a/"], [f"{BASE}/a/"]]
    assert "1 URL(s) retry (429)" in stdout
    assert "Retrying 1 URL(s) in 0s (attempt 2 of 3)" in stdout
    assert summary(stdout).endswith("1 sent, 0 failed.")


def test_retries_exhausted_under_sync_fail_the_command(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(RETRY={"MAX_ATTEMPTS": 2, "SERVER_ERROR_DELAY": 0})
    engine.queue_replies(Reply(503), Reply(503))

    with pytest.raises(CommandError, match=r"answered 503 .*after 2 attempts"):
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

    assert "\r\x1b[K30 read, 30 valid, 0 invalid, 30 sent, 0 failed" in on_tty
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
        "25000 read, 25000 valid, 0 invalid, 0 duplicate(s), 0 debounced, 25000 queued in 3 job(s), "
        "0 failed."
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
    assert summary(stdout).endswith("1 debounced, 1 queued in 1 job(s), 0 failed.")
    assert summary(forced).endswith("0 debounced, 2 queued in 1 job(s), 0 failed.")


def test_queue_mode_with_redis_down_sends_now(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any], settings: Any
) -> None:
    settings.RQ_QUEUES = {"default": {"URL": f"redis://127.0.0.1:{services.free_port()}/0"}}
    indexnow_settings(DISPATCH="queue")

    stdout, stderr = submit("/a/")

    assert "is unreachable" in stderr and "sending now from this process instead" in stderr
    assert engine.posted_urls() == [f"{BASE}/a/"]
    assert summary(stdout).endswith("1 sent, 0 failed.")


# --------------------------------------------------------------------------- exit codes


def test_exit_codes_of_the_command_line(engine: LoopbackEngine) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "INDEXNOW_TEST_OVERRIDES": "{}",
    }

    def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "django", "indexnow_submit", *args],
            cwd=ROOT,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )

    ok = run("--file", "-", "--sync", stdin="/cli/\n")
    nothing_valid = run("--file", "-", "--sync", stdin="mailto:someone\n")
    engine.queue_replies(Reply(422, body=json.dumps({"message": "URLs do not belong to the host"})))
    rejected = run("/cli-2/", "--sync")

    assert ok.returncode == 0, ok.stderr
    assert nothing_valid.returncode == 1
    assert "stdin line 1: skipped 'mailto:someone'" in nothing_valid.stderr
    assert "CommandError: No valid URL to submit (1 invalid)." in nothing_valid.stderr
    assert rejected.returncode == 1
    assert "answered 422" in rejected.stderr
