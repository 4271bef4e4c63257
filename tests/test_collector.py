"""Units of work: one flush per unit, transactions, commands, ``batch()`` and ``submit()``.

``flushes`` records every call into ``dispatch`` (and lets it run, so the
loopback engine receives what a user's engine would).
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import transaction

from indexnow_django import batch, submit
from indexnow_django.units.collector import COMMAND_HOLD, current
from tests.needs import AT_ONCE
from tests.services import django_env, run_django
from tests.testapp.models import Page, Post

# Each flush is sent at once, in process (in the commands' processes too).
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.indexnow(**AT_ONCE, DEBOUNCE={"TTL": 0}),
]

BASE = "https://www.example.com"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def flushes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The URLs of each call into ``dispatch.dispatch``, which still runs."""
    from indexnow_django.units import dispatch as module

    calls: list[list[str]] = []
    real = module.dispatch

    def recording(urls: Any, **kwargs: Any) -> Any:
        calls.append(list(urls))
        return real(urls, **kwargs)

    monkeypatch.setattr(module, "dispatch", recording)
    return calls


def page(path: str) -> Page:
    return Page.objects.create(path=path)


# One flush per unit ----------------------------------------------------------------


def test_batch_flushes_once_at_its_end(engine: Any, flushes: list[list[str]]) -> None:
    with batch():
        page("/one/")
        page("/two/")
        assert flushes == []
    assert flushes == [["/one/", "/two/"]]
    assert [p.urls for p in engine.posts] == [[f"{BASE}/one/", f"{BASE}/two/"]]


def test_batch_as_a_decorator_flushes_once_per_call(flushes: list[list[str]]) -> None:
    @batch()
    def save(path: str) -> None:
        page(f"{path}1/")
        page(f"{path}2/")

    save("/a/")
    save("/b/")
    assert flushes == [["/a/1/", "/a/2/"], ["/b/1/", "/b/2/"]]


@pytest.mark.parametrize("form", ["async with", "with"])
def test_a_batch_in_a_coroutine_works_its_urls_out_where_the_orm_may_run(
    engine: Any, flushes: list[list[str]], form: str
) -> None:
    """Saves made with ``acreate`` in a ``batch()`` block of a coroutine, of a model whose
    ``urls()`` queries its tags, and a URL added by hand in the event loop: one flush,
    with every URL, delivered."""
    from asgiref.sync import sync_to_async

    from tests.testapp.models import Story

    async def save_two() -> None:
        await Story.objects.acreate(slug="first")
        submit("/stories/")  # in the event loop, after a save whose URLs wait
        await Story.objects.acreate(slug="second")

    async def run() -> None:
        if form == "async with":
            async with batch():
                await save_two()
        else:
            with batch():
                await save_two()
        await sync_to_async(lambda: None)()  # the loop still runs

    asyncio.run(asyncio.wait_for(run(), timeout=30))
    assert [sorted(urls) for urls in flushes] == [
        ["/stories/", "/stories/first/", "/stories/second/"]
    ]
    [post] = engine.wait_for_posts(1)
    assert sorted(post.urls) == [
        f"{BASE}/stories/",
        f"{BASE}/stories/first/",
        f"{BASE}/stories/second/",
    ]


def test_three_objects_in_one_transaction_give_one_flush(
    engine: Any, flushes: list[list[str]]
) -> None:
    with transaction.atomic():
        page("/a/")
        page("/b/")
        page("/c/")
        assert flushes == []
    assert flushes == [["/a/", "/b/", "/c/"]]
    assert [p.urls for p in engine.posts] == [[f"{BASE}/a/", f"{BASE}/b/", f"{BASE}/c/"]]


def test_outside_any_unit_each_commit_flushes_its_own(flushes: list[list[str]]) -> None:
    page("/autocommit-1/")
    page("/autocommit-2/")
    with transaction.atomic():
        page("/in-transaction/")
    assert flushes == [["/autocommit-1/"], ["/autocommit-2/"], ["/in-transaction/"]]


def test_duplicates_merge(flushes: list[list[str]]) -> None:
    with batch():
        home = page("/home/")
        home.save()
        submit("/home/")
        submit(["/home/", "/other/"])
    assert flushes == [["/home/", "/other/"]]


def test_nested_batches_flush_separately(flushes: list[list[str]]) -> None:
    with batch() as outer:
        page("/outer/")
        with batch() as inner:
            assert current() is inner
            page("/inner/")
        assert current() is outer
    assert current() is None
    assert flushes == [["/inner/"], ["/outer/"]]


def test_an_empty_unit_does_not_flush(flushes: list[list[str]]) -> None:
    with batch():
        draft = Post.objects.create(title="Draft", slug="draft")
        draft.delete()
    assert flushes == []


# Transactions ------------------------------------------------------------------------


def test_rollback_drops_the_urls(flushes: list[list[str]]) -> None:
    with batch():
        with pytest.raises(RuntimeError), transaction.atomic():
            page("/rolled-back/")
            submit("/by-hand/")
            raise RuntimeError("undo")
        page("/kept/")
    assert flushes == [["/kept/"]]


def test_urls_join_the_unit_only_when_the_transaction_commits(flushes: list[list[str]]) -> None:
    with batch() as collector, transaction.atomic():
        page("/pending/")
        assert collector.urls == {}
    assert flushes == [["/pending/"]]


def test_inner_rollback_drops_only_its_own_urls(flushes: list[list[str]]) -> None:
    with batch(), transaction.atomic():
        page("/outer-before/")
        with pytest.raises(RuntimeError), transaction.atomic():
            page("/inner/")
            with transaction.atomic():
                page("/innermost/")
            raise RuntimeError("undo the inner block")
        with transaction.atomic():
            page("/inner-kept/")
        page("/outer-after/")
    assert flushes == [["/outer-before/", "/inner-kept/", "/outer-after/"]]


def test_outer_rollback_drops_everything(flushes: list[list[str]]) -> None:
    with batch():
        with pytest.raises(RuntimeError), transaction.atomic():
            page("/outer/")
            with transaction.atomic():
                page("/inner/")
            raise RuntimeError("undo it all")
        with transaction.atomic():
            page("/next-transaction/")
    assert flushes == [["/next-transaction/"]]


def test_inner_rollback_outside_any_unit_flushes_the_rest_once(flushes: list[list[str]]) -> None:
    with transaction.atomic():
        page("/outer/")
        with pytest.raises(RuntimeError), transaction.atomic():
            page("/inner/")
            raise RuntimeError("undo the inner block")
        with transaction.atomic():
            page("/inner-kept/")
    with transaction.atomic(), pytest.raises(RuntimeError), transaction.atomic():
        page("/only-rolled-back/")
        raise RuntimeError("undo")
    assert flushes == [["/outer/", "/inner-kept/"]]


def test_a_unit_ending_inside_a_transaction_flushes_at_commit(flushes: list[list[str]]) -> None:
    with transaction.atomic():
        with batch():
            page("/late/")
        assert flushes == []
    assert flushes == [["/late/"]]


def test_submit_outside_a_transaction_joins_the_unit_at_once(flushes: list[list[str]]) -> None:
    with batch() as collector:
        submit("/by-hand/")
        assert list(collector.urls) == ["/by-hand/"]
    assert flushes == [["/by-hand/"]]


# Management commands -----------------------------------------------------------------


def test_a_command_saving_100_objects_flushes_once(engine: Any, flushes: list[list[str]]) -> None:
    out = io.StringIO()
    call_command("make_pages", "100", stdout=out)
    assert out.getvalue() == "created 100 pages\n"
    assert flushes == [[f"/made/{n}/" for n in range(100)]]
    [post] = engine.posts
    assert post.urls == [f"{BASE}/made/{n}/" for n in range(100)]


def test_manage_py_command_flushes_once(engine: Any) -> None:
    """The real thing: a separate process running the command, posting to the same engine."""
    result = run_django("make_pages", "3")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "created 3 pages\n"
    assert [p.urls for p in engine.posts] == [
        [f"{BASE}/made/0/", f"{BASE}/made/1/", f"{BASE}/made/2/"]
    ]


def command_env(**overrides: Any) -> dict[str, str]:
    """The environment of a command process: this module's settings, and ``overrides``."""
    marked = json.loads(os.environ.get("INDEXNOW_TEST_OVERRIDES", "{}"))
    return django_env(INDEXNOW_TEST_OVERRIDES=json.dumps({**marked, **overrides}))


@pytest.mark.slow
def test_a_long_running_command_sends_what_it_committed_within_seconds(
    engine: Any, tmp_path: Path
) -> None:
    """No list of command names: any command still running flushes what it holds."""
    stop = tmp_path / "stop"
    process = subprocess.Popen(
        [sys.executable, "-m", "django", "serve_pages", str(stop)],
        cwd=ROOT,
        env=command_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "saved first\n"
        # Sent once COMMAND_HOLD has passed (by the wait's deadline), while the command runs.
        [post] = engine.wait_for_posts(1, timeout=COMMAND_HOLD + 10)
        assert post.urls == [f"{BASE}/served/first/"]
        assert process.poll() is None  # still running
        stop.touch()
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert out == "saved last\n"
    assert [p.urls for p in engine.posts] == [[f"{BASE}/served/first/"], [f"{BASE}/served/last/"]]


@pytest.mark.slow
def test_a_short_command_saving_50_objects_gives_one_job(redis_conn: Any) -> None:
    from rq import Queue

    # A job per flush (no coalescing window): the command's one flush is one job.
    overrides = '{"DISPATCH": "queue", "QUEUE": {"COALESCE": 0}}'
    result = run_django("make_pages", "50", INDEXNOW_TEST_OVERRIDES=overrides)
    assert result.returncode == 0, result.stderr
    [job] = Queue("default", connection=redis_conn).jobs
    assert job.args[0] == [f"{BASE}/made/{n}/" for n in range(50)]


@pytest.mark.slow
def test_manage_py_test_captures_and_leaves_nothing_to_send(
    engine: Any, redis_url: str, tmp_path: Path
) -> None:
    """A project's own TestCase tests under Django's test runner (a subprocess)."""
    import redis

    queue_db = redis.Redis.from_url(f"{redis_url}/3")
    queue_db.flushdb()
    env = {
        **os.environ,
        "RUNNER_DB": str(tmp_path / "runner.sqlite3"),
        "RUNNER_REDIS_URL": f"{redis_url}/3",
        "RUNNER_ENGINE_URL": engine.url,
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tests" / "runner_project" / "manage.py"),
            "test",
            "tests.runner_project.publishing",
            "-v",
            "2",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Ran 3 tests" in result.stderr
    assert "Destroying test database" in result.stderr
    # The process has ended: a POST of its own would have been received before it did,
    # and a job of its own would be in the queue.
    assert engine.posts == []
    assert queue_db.keys("rq:*") == []
    queue_db.close()


def test_with_command_units_off_a_command_is_no_unit_and_each_save_flushes_as_it_commits(
    engine: Any,
    flushes: list[list[str]],
    indexnow_settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What Django's start does with ``COMMAND_UNITS: False``, in this process (started
    long ago): ``BaseCommand.execute`` is left as Django has it."""
    from django.core.management.base import BaseCommand

    from indexnow_django import conf
    from indexnow_django.units import commands

    wrapped = BaseCommand.execute
    original = wrapped.__wrapped__  # type: ignore[attr-defined]
    monkeypatch.setattr(BaseCommand, "execute", original)  # the wrap comes back afterwards
    indexnow_settings(COMMAND_UNITS=False)
    commands.install_command_units(conf.command_units_enabled())
    assert BaseCommand.execute is original

    call_command("make_pages", "3", stdout=io.StringIO())
    assert flushes == [["/made/0/"], ["/made/1/"], ["/made/2/"]]
    assert [p.urls for p in engine.posts] == [[f"{BASE}/made/{n}/"] for n in range(3)]

    # True, or a value the checks refuse (indexnow.E010), wraps it.
    for value in (True, "no"):
        monkeypatch.setattr(BaseCommand, "execute", original)
        indexnow_settings(COMMAND_UNITS=value)
        commands.install_command_units(conf.command_units_enabled())
        assert getattr(BaseCommand.execute, "indexnow_around", None) is commands.command_unit


def test_manage_py_with_command_units_off_flushes_each_save(engine: Any) -> None:
    """The real start: a process of its own, ``COMMAND_UNITS`` off in its settings."""
    overrides = command_env(COMMAND_UNITS=False)["INDEXNOW_TEST_OVERRIDES"]
    result = run_django("make_pages", "3", INDEXNOW_TEST_OVERRIDES=overrides)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "created 3 pages\n"
    assert sorted(p.urls[0] for p in engine.posts) == [f"{BASE}/made/{n}/" for n in range(3)]
    assert [len(p.urls) for p in engine.posts] == [1, 1, 1]


def test_a_command_called_inside_a_unit_joins_it(flushes: list[list[str]]) -> None:
    with batch():
        page("/before/")
        call_command("make_pages", "2", stdout=io.StringIO())
    assert flushes == [["/before/", "/made/0/", "/made/1/"]]


# Never raising into the user's code -----------------------------------------------------


def test_a_failing_dispatch_is_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from indexnow_django.units import dispatch as module

    def broken(urls: Any, **kwargs: Any) -> None:
        raise ConnectionError("nowhere to send")

    monkeypatch.setattr(module, "dispatch", broken)
    with caplog.at_level(logging.ERROR, logger="indexnow_django"), batch():
        page("/unsent/")
    assert Page.objects.filter(path="/unsent/").exists()
    [record] = [r for r in caplog.records if r.name == "indexnow_django.units.collector"]
    assert record.getMessage().startswith("IndexNow could not flush unit=batch-")
    assert record.getMessage().endswith(" count=1")


def test_a_broken_setting_never_breaks_a_save(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.INDEXNOW = {"KEY": "short", "ENGINES": "not-a-list"}
    with caplog.at_level(logging.ERROR, logger="indexnow_django"), batch():
        page("/misconfigured/")
    assert Page.objects.filter(path="/misconfigured/").exists()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors
    assert all(r.name.startswith("indexnow_django") for r in errors)


def test_disabled_collects_nothing_submitted_by_hand(
    indexnow_settings: Any, flushes: list[list[str]]
) -> None:
    indexnow_settings(ENABLED=False)
    with batch() as collector:
        submit("/off/")
        assert collector.urls == {}
    submit("/off-too/")
    assert flushes == []


@pytest.mark.django_db(transaction=False)
def test_in_a_test_case_transaction_captured_callbacks_flush(
    django_capture_on_commit_callbacks: Any, flushes: list[list[str]]
) -> None:
    """How a site's own TestCase-style tests see submissions: on_commit callbacks run on demand."""
    with django_capture_on_commit_callbacks(execute=True):
        page("/captured-1/")
        page("/captured-2/")
    assert flushes == [["/captured-1/", "/captured-2/"]]
    page("/never-committed/")
    assert flushes == [["/captured-1/", "/captured-2/"]]


@pytest.mark.django_db(transaction=False)
def test_a_capture_block_after_earlier_saves_of_its_transaction_still_flushes_its_own(
    django_capture_on_commit_callbacks: Any, flushes: list[list[str]]
) -> None:
    """Saves made before a capture block, at the same depth of savepoints, do not hide
    the saves made inside it: the block's callbacks hand them over (with those before)."""
    page("/before-the-block/")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        page("/in-the-block/")
    assert callbacks, "the block captured no callback"
    assert flushes == [["/before-the-block/", "/in-the-block/"]]


def test_a_shell_that_opened_the_locmem_mail_backend_still_flushes_once(engine: Any) -> None:
    """Opening Django's locmem email backend (which creates ``mail.outbox``) in a shell
    does not make the shell's saves look like tests' saves."""
    script = (
        "from django.core import mail\n"
        "mail.get_connection('django.core.mail.backends.locmem.EmailBackend')\n"
        "assert hasattr(mail, 'outbox')\n"
        "from tests.testapp.models import Page\n"
        "for n in range(3):\n"
        "    Page.objects.create(path=f'/shell/{n}/')\n"
    )
    result = run_django("shell", "-c", script)
    assert result.returncode == 0, result.stderr
    assert [p.urls for p in engine.posts] == [[f"{BASE}/shell/{n}/" for n in range(3)]]
