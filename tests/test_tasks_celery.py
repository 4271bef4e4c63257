"""``DISPATCH: "tasks"`` on Celery: a real ``celery worker`` on the suite's Redis as broker,
through django-tasks-celery (Django 6) or django-tasks-fennel (Django 5.2), as a site sets it
up (docs/celery.md): the worker imports the site's Celery app (tests/celeryapp.py), never
``indexnow_django.tasks``. And ``indexnow_check`` on the backends whose queue it cannot read
(Celery's, django-tasks-rq's): whether a worker takes the app's tasks.

Under CI the Celery backend must be installed (the test extra and the stack pins install it);
elsewhere these tests are skipped without it, saying what to install.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import time
from io import StringIO
from typing import Any

import django
import pytest
import redis
from django.conf import settings
from django.core.cache import caches
from django.core.management import CommandError, call_command
from django.utils import timezone

from indexnow_django.conf import get_settings
from indexnow_django.models import Delivery
from indexnow_django.testing import Reply
from indexnow_django.transports.tasks.enqueue import backend, queue_of
from indexnow_django.units.dispatch import dispatch
from tests.needs import UNTHROTTLED
from tests.rqhelpers import FAST_RETRY
from tests.testapp.models import Page, Post

pytestmark = pytest.mark.django_db(transaction=True)

A = "https://www.example.com/a/"
B = "https://www.example.com/b/"
#: The Celery backend this stack must test: django-tasks-celery needs Django 6.
WANTED = "django-tasks-celery" if django.VERSION >= (6, 0) else "django-tasks-fennel"
INSTALLED = getattr(settings, "CELERY_BACKEND", None)


@pytest.fixture
def celery_backend() -> None:
    """Fail under CI when this stack's Celery backend is missing; skip elsewhere."""
    if INSTALLED is None or importlib.util.find_spec("celery") is None:
        reason = (
            f"no Celery backend for django.tasks: pip install celery packaging {WANTED} "
            "(the test extra installs django-tasks-fennel; CI's Django 6 stack pins "
            "django-tasks-celery)"
        )
    elif INSTALLED != WANTED:
        reason = f"{WANTED} is this stack's Celery backend, but {INSTALLED} is the one installed"
    else:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def celery_settings(indexnow_settings: Any, backend_alias: str = "celery", **changes: Any) -> Any:
    """Tasks dispatch on ``backend_alias`` with fast retries, a debounce cache the worker
    shares, here and (returned) for the worker."""
    overrides: dict[str, Any] = {
        "DISPATCH": "tasks",
        "TASKS": {"BACKEND": backend_alias, "QUEUE_NAME": "default"},
        "RETRY": dict(FAST_RETRY),
        "DEBOUNCE": {"CACHE": "shared", "TTL": 600},
        **UNTHROTTLED,
        **changes,
    }
    indexnow_settings(**overrides)
    return overrides


def worker_queue() -> str:
    """The Celery queue the app's tasks go to (what the worker must serve)."""
    return queue_of(backend(get_settings(resolve_hosts=False)), "default")


@pytest.fixture
def celery_worker(celery_backend: None, indexnow_settings: Any, start_celery_worker: Any) -> Any:
    """Tasks on the Celery backend, and a real worker serving their queue."""
    overrides = celery_settings(indexnow_settings)
    return start_celery_worker(overrides, queues=[worker_queue()])


def run_check() -> tuple[str, CommandError | None]:
    out = StringIO()
    try:
        call_command("indexnow_check", "--offline", stdout=out, no_color=True)
    except CommandError as exc:
        return out.getvalue(), exc
    return out.getvalue(), None


def celery_result(task_id: str) -> Any:
    """The Celery result of ``task_id``, once the worker stored it."""
    from celery import current_app

    result = current_app.AsyncResult(task_id)
    deadline = time.monotonic() + 30
    while not result.ready():
        assert time.monotonic() < deadline, f"task {task_id} is {result.state} after 30s"
        time.sleep(0.1)
    return result


def wait_until_celery_idle(timeout: float = 30.0) -> None:
    """Block until the broker's queue is empty and the worker holds no task, running,
    reserved or waiting for its ETA (a retry's): no task is left that could send."""
    from tests.celeryapp import app

    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    inspect = app.control.inspect(timeout=1.0)
    deadline = time.monotonic() + timeout
    while True:
        # The queue's lists on the Redis broker (one per priority step).
        lists = broker.scan_iter(match=f"{worker_queue()}*", _type="list")
        waiting = sum(broker.llen(name) for name in lists)
        held = {"active": inspect.active(), "reserved": inspect.reserved()}
        held["scheduled"] = inspect.scheduled()
        # No answer is no worker to tell: not idle.
        if not waiting and all(answer and not any(answer.values()) for answer in held.values()):
            return
        assert time.monotonic() < deadline, f"{waiting} waiting, {held} after {timeout:g}s"
        time.sleep(0.1)


# ---------------------------------------------------------------- a Celery worker


@pytest.mark.worker
def test_a_save_reaches_the_engine_through_a_celery_worker(celery_worker, engine):
    Page.objects.create(path="/a/")

    [post] = engine.wait_for_posts(1, timeout=30)
    assert post.urls == [A]
    output = celery_worker.wait_for_output("status=200")
    assert "unregistered task" not in output


@pytest.mark.worker
def test_a_503_is_sent_again_and_a_202_ends_it(celery_worker, engine):
    engine.queue_replies(Reply(503), Reply(202))
    dispatch(["/a/", "/b/"])

    first, second = engine.wait_for_posts(2, timeout=30)
    assert first.urls == second.urls == [A, B]
    assert second.received_at - first.received_at >= 1.0  # run_after: the backoff
    output = celery_worker.wait_for_output("status=202")
    assert "status=503 attempt=2/3" in output
    wait_until_celery_idle()
    assert len(engine.posts) == 2


@pytest.mark.worker
def test_a_403_is_final_in_the_history_and_in_the_task_result(celery_worker, engine, history_on):
    from indexnow_django import tasks as stable

    engine.queue_replies(Reply(403, body="UserForbiddedToAccessSite"))
    task_id = stable.deliver.enqueue([A], batch_id="b403").id

    result = celery_result(str(task_id))
    assert result.state == "FAILURE"
    assert type(result.result).__name__ == "SubmissionRejected"
    text = str(result.result)
    assert "IndexNow batch b403 was rejected" in text
    assert "UserForbiddedToAccessSite" in text
    assert "Run manage.py indexnow_check" in text
    [record] = Delivery.objects.filter(batch_id="b403")
    assert (record.outcome, record.status) == ("rejected", 403)
    assert "UserForbiddedToAccessSite" in record.answer
    wait_until_celery_idle()
    assert len(engine.posts) == 1  # not retried


@pytest.mark.worker
def test_a_publication_ahead_arrives_at_its_time(celery_worker, engine):
    when = timezone.now() + datetime.timedelta(seconds=4)
    Post.objects.create(title="soon", slug="soon", status=Post.PUBLISHED, published_at=when)
    assert engine.posts == []

    [post] = engine.wait_for_posts(1, timeout=30)
    assert post.urls == ["https://www.example.com/posts/soon/"]
    assert post.received_at >= when.timestamp()  # the worker held it to its ETA


@pytest.mark.worker
def test_indexnow_submit_model_delivers_through_the_worker(celery_worker, engine):
    Post.objects.bulk_create([Post(title=s, slug=s, status=Post.PUBLISHED) for s in ("one", "two")])
    out = StringIO()
    call_command("indexnow_submit", "--model", "testapp.Post", stdout=out)
    assert "cannot take" not in out.getvalue()

    [post] = engine.wait_for_posts(1, timeout=30)
    assert sorted(post.urls) == [
        "https://www.example.com/posts/one/",
        "https://www.example.com/posts/two/",
    ]


@pytest.mark.worker
def test_a_site_shared_task_saving_three_posts_makes_one_post(celery_worker, engine):
    import tests.celeryapp  # noqa: F401  (a site's proj/__init__.py imports its app)
    from tests.testapp.tasks import publish_posts

    publish_posts.apply_async((["one", "two", "three"],), queue=worker_queue())

    [post] = engine.wait_for_posts(1, timeout=30)
    assert post.urls == [f"https://www.example.com/posts/{s}/" for s in ("one", "two", "three")]
    celery_worker.wait_for_output("succeeded")
    wait_until_celery_idle()
    assert len(engine.posts) == 1


# ---------------------------------------------------------------- indexnow_check


def backdate_waiting(seconds: float) -> None:
    """Make the oldest task of the app that waits untaken ``seconds`` old (the mark the
    enqueue left), rather than wait that long."""
    from indexnow_django.transports.tasks.enqueue import _mark_keys

    key = _mark_keys(get_settings(resolve_hosts=False))[0]
    cache = caches["shared"]
    assert cache.get(key) is not None, "no task waits"
    cache.set(key, time.time() - seconds)


def check_fails_then_passes(start: Any, engine: Any, queue: str) -> None:
    from indexnow_django.transports.tasks import enqueue

    enqueue._marked.clear()  # this process left no mark within MARK_EVERY seconds
    dispatch(["/a/"])  # no worker yet
    output, error = run_check()
    assert error is None, output
    assert "no task of this app has run on backend" in output  # not known: a warning
    backdate_waiting(90)

    output, error = run_check()
    assert error is not None, output
    assert f"a task of this app has waited 90s on queue {queue!r} and no worker took" in output

    start()
    engine.wait_for_posts(1, timeout=30)
    output, error = run_check()
    assert error is None, output
    assert "a worker took this app's last task" in output


@pytest.mark.worker
def test_check_fails_while_no_celery_worker_takes_a_waiting_delivery(
    celery_backend, indexnow_settings, start_celery_worker, engine
):
    overrides = celery_settings(indexnow_settings)
    queue = worker_queue()
    output, _ = run_check()
    if INSTALLED == "django-tasks-celery":
        assert "queue 'default' (Celery's queue 'celery')" in output
    check_fails_then_passes(lambda: start_celery_worker(overrides, queues=[queue]), engine, queue)


@pytest.mark.worker
def test_check_fails_while_no_rq_worker_takes_a_waiting_delivery(
    indexnow_settings, start_worker, engine, redis_conn
):
    overrides = celery_settings(indexnow_settings, backend_alias="rq")
    check_fails_then_passes(
        lambda: start_worker(overrides, extra_args=["--job-class", "django_tasks_rq.Job"]),
        engine,
        "default",
    )


# ---------------------------------------------------------------- process start


STARTS = """
import sys
FIRST
import django
from django.conf import settings
settings.configure(
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "indexnow_django"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    INDEXNOW={"KEY": "0123456789abcdef0123", "BASE_URL": "https://www.example.com"},
)
django.setup()
print("celery loaded after Django's start:", "celery" in sys.modules)
from celery import signals
print("task_prerun receivers:", len(signals.task_prerun.receivers))
"""


@pytest.mark.parametrize("first", ["", "import tests.celeryapp"])
def test_celery_tasks_are_units_only_where_celery_was_loaded_before_django(celery_backend, first):
    """A Celery worker (and a web process whose project package loads its Celery app) has
    Celery loaded before Django starts: its tasks become units of work. Any other process
    starts without importing Celery at all."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    result = subprocess.run(
        [sys.executable, "-c", STARTS.replace("FIRST", first)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    if first:
        assert "celery loaded after Django's start: True" in lines
        assert "task_prerun receivers: 0" not in lines
    else:
        assert "celery loaded after Django's start: False" in lines
        assert "task_prerun receivers: 0" in lines
