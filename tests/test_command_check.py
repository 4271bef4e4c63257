"""``manage.py indexnow_check``: what it reports, and its exit code, for each failure mode.

Key files are fetched from a real HTTP server on 127.0.0.1 that serves the test
project (Django's WSGI application, hence the real key file view) plus a few
broken answers a misconfigured site gives: another key, an HTML page, a
redirect.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta, timezone
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import call_command
from django.core.management.base import CommandError
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from rq import Queue
from rq.job import Job
from rq.worker import Worker as RQWorker

from indexnow_django.ops.diagnostics import KEY_FILE_FETCHES
from indexnow_django.protocol.client import endpoint_name
from indexnow_django.testing import LoopbackEngine, Reply
from tests import services
from tests.services import run_django

# indexnow_check counts the submissions that wait in the database.
pytestmark = pytest.mark.django_db
#: On a test whose workers write to the database (the history): its rows are removed
#: after it, not left to the tests that follow.
WORKERS_WRITE = pytest.mark.django_db(transaction=True)

KEY = "test-key-0123456789"
ROOT = Path(__file__).resolve().parent.parent

Environ = dict[str, Any]
StartResponse = Callable[..., Any]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class KeyServer:
    """The test project on a real HTTP server, with some broken key files beside it."""

    BROKEN = {
        "/other-key.txt": ("200 OK", "text/plain; charset=utf-8", "other-key-abcdef123456\n"),
        "/html.txt": (
            "200 OK",
            "text/html; charset=utf-8",
            "<!DOCTYPE html><html><body>Welcome to our shop</body></html>",
        ),
        "/as-html.txt": ("200 OK", "text/html", KEY),
    }

    def __init__(self) -> None:
        self.django = WSGIHandler()
        self.server = ThreadedWSGIServer(("127.0.0.1", 0), _QuietHandler, allow_reuse_address=True)
        self.server.set_app(self.app)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        #: The most ``/slow/`` key files it was serving at once.
        self.lock = threading.Lock()
        self.in_flight = self.most_at_once = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def app(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        path = environ["PATH_INFO"]
        if path in self.BROKEN:
            status, content_type, body = self.BROKEN[path]
            start_response(status, [("Content-Type", content_type)])
            return [body.encode()]
        if path.startswith("/slow/"):  # a tenant's key file, a tenth of a second away
            with self.lock:
                self.in_flight += 1
                self.most_at_once = max(self.most_at_once, self.in_flight)
            time.sleep(0.1)
            with self.lock:
                self.in_flight -= 1
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [KEY.encode()]
        if path == "/moved.txt":
            start_response("301 Moved Permanently", [("Location", f"/{KEY}.txt")])
            return [b""]
        return self.django(environ, start_response)  # type: ignore[no-any-return]

    def __enter__(self) -> KeyServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def key_server() -> Iterator[KeyServer]:
    with KeyServer() as server:
        yield server


@pytest.fixture
def run_check() -> Callable[..., tuple[str, CommandError | None]]:
    """Run the command; return its output and the ``CommandError`` it raised, if any."""

    def run(*args: str) -> tuple[str, CommandError | None]:
        out = StringIO()
        try:
            call_command("indexnow_check", *args, stdout=out, no_color=True)
        except CommandError as exc:
            return out.getvalue(), exc
        return out.getvalue(), None

    return run


@pytest.fixture
def queue_settings(
    settings: Any,
    indexnow_settings: Callable[..., Any],
    key_server: KeyServer,
    redis_conn: redis.Redis,
) -> Any:
    """A site that delivers through the queue, its key file on the key server."""
    indexnow_settings(
        DISPATCH="queue",
        KEY_LOCATION=f"{key_server.base}/{KEY}.txt",
        DEBOUNCE={"CACHE": "shared", "TTL": 600},
    )
    return settings


@pytest.fixture
def persistent_redis(redis_conn: redis.Redis) -> Iterator[redis.Redis]:
    """The suite's Redis with RDB snapshots on (it runs without persistence)."""
    redis_conn.config_set("save", "3600 1")
    yield redis_conn
    redis_conn.config_set("save", "")


def wait_for_scheduler_birth(conn: redis.Redis, timeout: float = 10) -> None:
    """The scheduler takes its lock before it writes its host and pid: wait for both."""
    from rq.scheduler import RQScheduler

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        holder = conn.get(RQScheduler.get_locking_key("default"))
        try:
            if holder is not None and RQScheduler.fetch(holder.decode(), conn).pid:
                return
        except Exception:
            pass
        time.sleep(0.05)
    raise AssertionError("the scheduler did not register within the timeout")


def key_server_port(settings: Any) -> str:
    return str(settings.INDEXNOW["KEY_LOCATION"].split(":")[2].split("/")[0])


def line(output: str, status: str, text: str) -> str:
    """The output line marked ``status`` that contains ``text`` (fails when there is none)."""
    for candidate in output.splitlines():
        if candidate.strip().startswith(status) and text in candidate:
            return candidate
    raise AssertionError(f"no {status} line with {text!r} in:\n{output}")


# --------------------------------------------------------------------------- healthy site


def same_settings(settings: Any) -> dict[str, Any]:
    """The overrides that start a worker with the test's own INDEXNOW."""
    return {name: settings.INDEXNOW[name] for name in ("DISPATCH", "KEY_LOCATION", "DEBOUNCE")}


@WORKERS_WRITE
@pytest.mark.worker
def test_healthy_queue_setup_passes_and_names_worker_and_scheduler(
    queue_settings: Any,
    persistent_redis: redis.Redis,
    start_worker: Callable[..., Any],
    run_check: Any,
) -> None:
    worker = start_worker(same_settings(queue_settings))
    wait_for_scheduler_birth(persistent_redis)

    output, error = run_check()

    assert error is None, output
    line(output, "OK", "the workers run with these INDEXNOW settings (fingerprint ")
    line(output, "OK", "DISPATCH 'queue'")
    line(output, "OK", "queue 'default' on Redis 127.0.0.1:")
    line(output, "OK", "ASYNC")
    line(output, "OK", f"worker {worker.name} on ")
    line(output, "OK", "scheduler runs for queue 'default' on ")
    line(output, "OK", "worker class indexnow_django.worker.Worker")
    line(output, "OK", "persists to disk (save '3600 1')")
    masked_url = queue_settings.INDEXNOW["KEY_LOCATION"].replace(KEY, "test…")
    line(output, "OK", f"key file {masked_url}: 200, matches the key")
    line(output, "OK", "cache 'shared' (django.core.cache.backends.redis.RedisCache)")
    warnings = [text for text in output.splitlines() if text.strip().startswith(("WARN", "FAIL"))]
    from indexnow_django.tracking import registry

    # The only warning: the test key file is served from 127.0.0.1, not www.example.com.
    assert warnings == [
        "  WARN  www.example.com: the key file is on another host "
        f"(127.0.0.1:{key_server_port(queue_settings)}); engines look for it on the host whose "
        "URLs are submitted"
    ] + (
        [] if registry else ["  WARN  no model is registered: only URLs submitted by hand are sent"]
    )
    assert output.rstrip().endswith(
        f"Delivery can work (0 failure(s), {len(warnings)} warning(s))."
    )


def test_auto_dispatch_without_queue_resolves_to_sync(
    settings: Any, indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    settings.RQ_QUEUES = {}
    indexnow_settings(DISPATCH="auto")

    output, error = run_check("--offline")

    assert error is None, output
    line(
        output,
        "OK",
        "DISPATCH 'auto' resolved to 'sync' (QUEUE['NAME'] 'default' is not in RQ_QUEUES)",
    )
    line(output, "OK", "no queue is used (sync dispatch)")
    line(output, "OK", "key files not fetched (--offline)")


def test_auto_dispatch_with_queue_resolves_to_queue(
    indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    indexnow_settings(DISPATCH="auto")

    output, _ = run_check("--offline")

    line(
        output,
        "OK",
        "DISPATCH 'auto' resolved to 'queue' (QUEUE['NAME'] 'default' is in RQ_QUEUES)",
    )


# --------------------------------------------------------------------------- failures


def test_queue_name_missing_from_rq_queues_fails(
    indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    indexnow_settings(DISPATCH="queue", QUEUE={"NAME": "indexnow"})

    output, error = run_check("--offline")

    assert error is not None
    assert error.returncode == 1
    assert "QUEUE']['NAME'] 'indexnow' is not in RQ_QUEUES" in str(error)
    line(
        output,
        "FAIL",
        "indexnow.E014: INDEXNOW['DISPATCH'] is 'queue' but INDEXNOW['QUEUE']['NAME'] 'indexnow'",
    )


def test_unreachable_redis_fails_quickly(
    settings: Any, indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    port = services.free_port()  # nothing listens there
    settings.RQ_QUEUES = {"default": {"URL": f"redis://127.0.0.1:{port}/3"}}
    indexnow_settings(DISPATCH="queue")

    output, error = run_check("--offline")

    assert error is not None
    assert f"queue 'default': Redis at 127.0.0.1:{port}/3 is unreachable" in str(error)
    line(output, "FAIL", f"Redis at 127.0.0.1:{port}/3 is unreachable")
    assert "Workers" not in output  # nothing more is asked of a Redis that is not there


def test_missing_key_file_fails_with_url_and_status(
    indexnow_settings: Callable[..., Any], key_server: KeyServer, run_check: Any
) -> None:
    url = f"{key_server.base}/0000000000000000.txt"
    indexnow_settings(KEY_LOCATION=url)

    output, error = run_check()

    assert error is not None
    assert f"key file {url} answered 404 Not Found" in str(error)
    assert 'include("indexnow_django.urls")' in line(output, "hint:", "include")


@pytest.mark.slow
def test_five_hundred_hosts_key_files_are_fetched_a_few_at_a_time(
    indexnow_settings: Callable[..., Any], key_server: KeyServer, run_check: Any
) -> None:
    hosts = {
        f"t{i}.tenants.test": {"KEY_LOCATION": f"{key_server.base}/slow/{i}.txt"}
        for i in range(500)
    }
    indexnow_settings(HOSTS=hosts)

    output, error = run_check()

    assert error is None, output
    for i in (0, 250, 499):
        line(output, "OK", f"key file {key_server.base}/slow/{i}.txt: 200, matches the key")
    assert output.count(": 200, matches the key") == 500
    # A few at a time (one after another they would take 50 s), never more than that.
    assert 2 <= key_server.most_at_once <= KEY_FILE_FETCHES


@pytest.mark.django_db
def test_a_flush_on_every_host_close_to_the_job_timeout_warns(
    queue_settings: Any, indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    from indexnow_django.protocol.client import endpoint_name
    from tests.conftest import make_delivery

    engine_name = endpoint_name(queue_settings.INDEXNOW["ENGINES"][0])
    for _ in range(3):
        make_delivery(engine=engine_name, duration=0.3)
    indexnow_settings(HOSTS=[f"t{i}.tenants.test" for i in range(200)], QUEUE={"TIMEOUT": 10})

    output, error = run_check("--offline")

    assert error is None, output
    line(
        output,
        "WARN",
        "a flush on all 200 host(s) is 200 POST(s): about 7.5 s, 8 at a time at 0.30 s each "
        "(measured), close to or over the 6 s that a job of QUEUE['TIMEOUT'] 10 s sends for",
    )
    assert "raise QUEUE['TIMEOUT'] to 16 s or more so that one job holds it" in output
    indexnow_settings(QUEUE={"TIMEOUT": 60})
    output, _ = run_check("--offline")
    line(output, "OK", "a flush on all 200 host(s) is 200 POST(s): about 7.5 s")


def test_a_steady_stream_of_delivery_jobs_suggests_coalescing(
    queue_settings: Any, indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    from indexnow_django.units.dispatch import dispatch

    indexnow_settings(QUEUE={"COALESCE": 0})  # a job per flush, as the site asked
    for i in range(700):  # a job each: more than 60 a minute over the last ten minutes
        dispatch([f"/p/{i}/"])

    output, error = run_check("--offline")

    assert error is None, output
    found = line(output, "WARN", "delivery jobs a minute over the last 10 minutes")
    assert int(found.split()[1]) >= 60
    assert "Set QUEUE['COALESCE'] back to a few seconds (2, the default)" in output

    indexnow_settings(QUEUE={"COALESCE": 5})
    dispatch(["/pending/"])
    output, _ = run_check("--offline")
    line(output, "OK", "coalesced delivery: one delivery every 5 s, 1 URL(s) pending")
    assert "delivery jobs a minute" not in output


def test_key_file_with_another_key_fails_and_masks_it(
    indexnow_settings: Callable[..., Any], key_server: KeyServer, run_check: Any
) -> None:
    url = f"{key_server.base}/other-key.txt"
    indexnow_settings(KEY_LOCATION=url)

    output, error = run_check()

    assert error is not None
    message = f"key file {url} answered 200 with a different key (othe…) instead of the key test…"
    assert message in str(error)
    line(output, "FAIL", message)
    assert "other-key-abcdef123456" not in output


def test_key_file_answered_by_an_html_page_fails(
    indexnow_settings: Callable[..., Any], key_server: KeyServer, run_check: Any
) -> None:
    url = f"{key_server.base}/html.txt"
    indexnow_settings(KEY_LOCATION=url)

    _output, error = run_check()

    assert error is not None
    assert (
        f"key file {url} answered 200 with an HTML page ('<!DOCTYPE html><html><body>Welcome to our "
        "shop</body></html>') instead of the key"
    ) in str(error)


def test_key_file_redirect_fails_and_names_the_target(
    indexnow_settings: Callable[..., Any], key_server: KeyServer, run_check: Any
) -> None:
    url = f"{key_server.base}/moved.txt"
    indexnow_settings(KEY_LOCATION=url)

    _output, error = run_check()

    assert error is not None
    assert f"key file {url} answered 301, a redirect to {key_server.base}/test….txt" in str(error)


def test_key_file_server_down_fails(indexnow_settings: Callable[..., Any], run_check: Any) -> None:
    port = services.free_port()
    indexnow_settings(KEY_LOCATION=f"http://127.0.0.1:{port}/{KEY}.txt")

    output, error = run_check()

    assert error is not None
    assert (
        f"key file http://127.0.0.1:{port}/test….txt could not be fetched: connection refused "
        "(nothing listens at that address and port)"
    ) in line(output, "FAIL", "could not be fetched")
    assert "NewConnectionError" not in output
    hint = line(output, "hint:", "offline")
    assert f"Is the site running at http://127.0.0.1:{port}? That is where BASE_URL" in hint
    assert "--offline" in hint


def test_key_file_that_never_answers_says_timeout(
    indexnow_settings: Callable[..., Any], run_check: Any, silent_redis: int
) -> None:
    indexnow_settings(
        KEY_LOCATION=f"http://127.0.0.1:{silent_redis}/{KEY}.txt", HTTP={"TIMEOUT": 0.5}
    )

    output, error = run_check()

    assert error is not None
    assert "could not be fetched: no answer within 0.5s (timeout)" in line(
        output, "FAIL", "could not be fetched"
    )


def test_key_file_served_as_html_warns(
    indexnow_settings: Callable[..., Any], key_server: KeyServer, run_check: Any
) -> None:
    url = f"{key_server.base}/as-html.txt"
    indexnow_settings(KEY_LOCATION=url)

    output, error = run_check()

    assert error is None, output
    line(output, "WARN", f"key file {url}: 200, matches the key, but is served as text/html")


def test_per_host_keys_are_each_fetched(
    indexnow_settings: Callable[..., Any], key_server: KeyServer, run_check: Any
) -> None:
    indexnow_settings(
        HOSTS={
            "www.example.com": {"KEY_LOCATION": f"{key_server.base}/{KEY}.txt"},
            "blog.example.com": {
                "KEY": "blog-key-98765432",
                "KEY_LOCATION": f"{key_server.base}/other-key.txt",
            },
        }
    )

    output, error = run_check()

    assert error is not None
    line(output, "OK", f"www.example.com: key test…, key file {key_server.base}/test….txt")
    line(output, "OK", f"key file {key_server.base}/test….txt: 200, matches the key")
    line(output, "OK", "blog.example.com: key blog…")
    line(output, "FAIL", "instead of the key blog…")
    line(output, "WARN", "www.example.com: the key file is on another host (127.0.0.1:")
    assert "blog-key-98765432" not in output


def test_previous_keys_are_listed_per_host_masked(
    indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    indexnow_settings(
        PREVIOUS_KEYS=["old-main-1234567"],
        HOSTS={
            "www.example.com": {},
            "blog.example.com": {"KEY": "blog-key-98765432", "PREVIOUS_KEYS": ["blog-old-1111"]},
        },
    )

    output, _ = run_check("--offline")

    line(output, "OK", "www.example.com: previous key(s) old-…: their key files are still served")
    line(output, "OK", "blog.example.com: previous key(s) blog…: their key files")
    assert "old-main-1234567" not in output and "blog-old-1111" not in output


def test_the_throttle_is_shown(indexnow_settings: Callable[..., Any], run_check: Any) -> None:
    indexnow_settings(THROTTLE={"MAX_REQUESTS_PER_MINUTE": 10})

    output, _ = run_check("--offline")

    line(output, "OK", "throttle: at most 10 POSTs a minute per engine, one every 6s")

    indexnow_settings(THROTTLE={"MAX_REQUESTS_PER_MINUTE": None})
    output, _ = run_check("--offline")
    line(output, "OK", "throttle: none")


def test_malformed_settings_fail_with_their_check_ids(
    indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    indexnow_settings(KEY="short", BATCH={"MAX_URLS": 20000})

    output, error = run_check("--offline")

    assert error is not None
    assert "INDEXNOW['KEY'] ***** must be 8 to 128 characters" in str(error)
    line(output, "FAIL", "indexnow.E004: INDEXNOW['KEY'] ***** must be")
    line(output, "FAIL", "INDEXNOW['BATCH']['MAX_URLS'] must be a whole number from 1 to 10000")
    assert "Dispatch" not in output


def test_unimportable_worker_class_fails(
    settings: Any, indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    settings.RQ = {"WORKER_CLASS": "myproject.workers.Missing"}
    indexnow_settings(DISPATCH="queue")

    _output, error = run_check("--offline")

    assert error is not None
    assert "rq worker class 'myproject.workers.Missing' cannot be imported" in str(error)


# --------------------------------------------------------------------------- warnings


def test_idle_queue_warns_about_worker_scheduler_and_cache(
    indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    indexnow_settings(DISPATCH="queue")  # DEBOUNCE uses CACHES["default"], a LocMemCache

    output, error = run_check("--offline")

    assert error is None, output
    line(output, "WARN", "no worker listens on queue 'default'")
    line(output, "WARN", "no scheduler runs for queue 'default'")
    line(output, "WARN", "indexnow.W002: INDEXNOW['DEBOUNCE']['CACHE'] is 'default' (LocMemCache)")
    assert "hint: Start one: python manage.py rqworker default --with-scheduler" in output


@WORKERS_WRITE
@pytest.mark.worker
def test_worker_without_scheduler_warns(
    queue_settings: Any, start_worker: Callable[..., Any], run_check: Any
) -> None:
    worker = start_worker(with_scheduler=False)

    output, error = run_check("--offline")

    assert error is None, output
    line(output, "OK", f"worker {worker.name}")
    line(output, "WARN", "no scheduler runs for queue 'default'")
    # Workers listen: the hint names what may be wrong with them.
    assert "The 1 worker(s) of the queue hold no scheduler lock: they were started " in output
    assert "Start (at least) one worker" not in output


@WORKERS_WRITE
@pytest.mark.worker
def test_a_worker_started_before_a_settings_change_is_named(
    queue_settings: Any,
    indexnow_settings: Callable[..., Any],
    start_worker: Callable[..., Any],
    run_check: Any,
) -> None:
    """DRY_RUN turned on for the web process, the worker not restarted: it still sends."""
    worker = start_worker(same_settings(queue_settings))
    indexnow_settings(DRY_RUN=True)

    output, error = run_check("--offline")

    assert error is None, output
    line(output, "WARN", "DRY_RUN is True: requests to engines are logged, not sent")
    found = line(output, "WARN", f"worker {worker.name} on ")
    assert f"(pid {worker.pid}) was started with other INDEXNOW settings than these" in found
    assert found.endswith("; DRY_RUN is False there, True here: it sends to the engines for real")
    assert "restart the workers after every change to the settings" in output
    assert "the workers run with these INDEXNOW settings" not in output


def test_synchronous_queue_warns(
    settings: Any, indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    settings.RQ_QUEUES = {"default": {**settings.RQ_QUEUES["default"], "ASYNC": False}}
    indexnow_settings(DISPATCH="queue")

    output, error = run_check("--offline")

    assert error is None, output
    line(output, "WARN", "RQ_QUEUES['default']['ASYNC'] is False: jobs run synchronously")
    line(output, "OK", "no worker or scheduler is needed: jobs run inline (ASYNC is False)")
    assert "no worker listens" not in output and "no scheduler runs" not in output


def test_plain_rq_worker_class_warns_with_the_line_to_add(
    settings: Any, indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    settings.RQ = {"WORKER_CLASS": "rq.worker.Worker"}
    indexnow_settings(DISPATCH="queue")

    output, error = run_check("--offline")

    assert error is None, output
    line(
        output, "WARN", "rq worker class 'rq.worker.Worker' does not run each job in a unit of work"
    )
    assert 'RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}' in output


def test_file_cache_warns_when_a_worker_runs_on_another_machine(
    settings: Any,
    indexnow_settings: Callable[..., Any],
    redis_conn: redis.Redis,
    tmp_path: Path,
    run_check: Any,
) -> None:
    settings.CACHES = {
        **settings.CACHES,
        "files": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path),
        },
    }
    indexnow_settings(DISPATCH="queue", DEBOUNCE={"CACHE": "files"})
    # What a worker on another machine writes in Redis when it starts.
    remote = RQWorker(
        [Queue("default", connection=redis_conn)], connection=redis_conn, name="remote-1"
    )
    remote.hostname = "worker-box-2"
    remote.register_birth()

    output, error = run_check("--offline")

    assert error is None, output
    line(output, "OK", "worker remote-1 on worker-box-2")
    line(output, "WARN", "cache 'files' (django.core.cache.backends.filebased.FileBasedCache)")
    line(output, "WARN", "which workers on worker-box-2 cannot share")


@pytest.mark.parametrize(
    ("dispatch", "warning"),
    [
        ("auto", "which keeps nothing: nothing is debounced, even with a single worker"),
        ("sync", "stores nothing, so nothing is debounced"),
    ],
)
def test_dummy_cache_warns_that_nothing_is_debounced(
    dispatch: str,
    warning: str,
    settings: Any,
    indexnow_settings: Callable[..., Any],
    run_check: Any,
) -> None:
    settings.CACHES = {
        **settings.CACHES,
        "none": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"},
    }
    indexnow_settings(DISPATCH=dispatch, DEBOUNCE={"CACHE": "none"})

    output, error = run_check("--offline")

    assert error is None, output
    line(output, "WARN", warning)


def test_disabled_and_dry_run_warn(indexnow_settings: Callable[..., Any], run_check: Any) -> None:
    indexnow_settings(ENABLED=False, DRY_RUN=True)

    output, error = run_check("--offline")

    assert error is None, output
    line(output, "WARN", "ENABLED is False: nothing is collected or sent")
    line(output, "WARN", "DRY_RUN is True")


# --------------------------------------------------------------------------- models and jobs


def test_registered_models_are_listed_with_their_options(
    indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    from indexnow_django.tracking import registry

    output, _ = run_check("--offline")

    if not registry:
        line(output, "WARN", "no model is registered")
    for model, options in registry.items():
        found = line(output, "OK", f"{model._meta.label} ({type(options).__qualname__})")
        if options.publish_at:
            assert f"publish_at={options.publish_at}" in found


def test_scheduled_and_failed_jobs_are_counted(
    indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    indexnow_settings(DISPATCH="queue")
    queue = Queue("default", connection=redis_conn)
    queue.enqueue_in(timedelta(hours=1), "indexnow_django.jobs.deliver", ["/later/"])
    queue.enqueue_in(timedelta(hours=1), "os.path.join", "a", "b")  # some other app's job
    failed = Job.create("indexnow_django.jobs.deliver", args=[["/x/"]], connection=redis_conn)
    failed.save()
    queue.failed_job_registry.add(failed, exc_string="SubmissionRejected: engine answered 403")

    output, error = run_check("--offline")

    assert error is None, output
    line(output, "OK", "queue 'default': 0 queued, 2 (1 IndexNow) scheduled")
    line(output, "WARN", "1 failed job(s) in rq's failed job registry")


def test_scheduled_jobs_past_their_time_are_overdue(
    indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    """No scheduler runs: a retry due 17 s ago is a warning, not "OK ... 1 scheduled"."""
    indexnow_settings(DISPATCH="queue")
    queue = Queue("default", connection=redis_conn)
    due = datetime.now(timezone.utc) - timedelta(seconds=17)
    queue.enqueue_at(due, "indexnow_django.jobs.deliver", ["/overdue/"])
    queue.enqueue_in(timedelta(hours=1), "indexnow_django.jobs.deliver", ["/later/"])

    output, error = run_check("--offline")

    assert error is None, output
    found = line(output, "WARN", "1 scheduled job(s) of 'default' overdue, the oldest by")
    assert re.search(r"by 1[789]s: no scheduler moves them", found)
    assert "--with-scheduler" in output[output.index(found) :].splitlines()[1]


def test_scheduled_jobs_not_yet_due_are_not_overdue(
    indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    indexnow_settings(DISPATCH="queue")
    Queue("default", connection=redis_conn).enqueue_in(
        timedelta(hours=1), "indexnow_django.jobs.deliver", ["/later/"]
    )

    output, _ = run_check("--offline")

    assert "overdue" not in output


# --------------------------------------------------------------------------- --json and exit codes


def test_json_gives_the_same_findings(
    indexnow_settings: Callable[..., Any],
    key_server: KeyServer,
    redis_conn: redis.Redis,
    run_check: Any,
) -> None:
    url = f"{key_server.base}/other-key.txt"
    indexnow_settings(DISPATCH="queue", KEY_LOCATION=url)

    text_output, text_error = run_check()
    json_output, json_error = run_check("--json")

    assert text_error is not None and json_error is not None
    assert str(json_error) == str(text_error)
    report = json.loads(json_output)
    assert report["ok"] is False
    assert report["failures"] == 1
    assert [s["id"] for s in report["sections"]] == [
        "settings",
        "dispatch",
        "queue",
        "workers",
        "engines",
        "hosts",
        "debounce",
        "models",
        "jobs",
        "health",
    ]
    hosts = next(s for s in report["sections"] if s["id"] == "hosts")
    fail = next(f for f in hosts["findings"] if f["status"] == "FAIL")
    assert fail["data"] == {
        "host": "www.example.com",
        "url": url,
        "http_status": 200,
        "content_type": "text/plain; charset=utf-8",
    }
    queue = next(s for s in report["sections"] if s["id"] == "queue")
    assert queue["findings"][0]["data"]["reachable"] is True
    messages = [f["message"] for s in report["sections"] for f in s["findings"]]
    assert all(message in text_output for message in messages)
    assert KEY not in json_output and KEY not in text_output


@pytest.mark.slow
def test_exit_codes_of_the_command_line(
    indexnow_settings: Callable[..., Any], key_server: KeyServer
) -> None:
    def run(overrides: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
        return run_django("indexnow_check", *args, INDEXNOW_TEST_OVERRIDES=json.dumps(overrides))

    good = run({"KEY_LOCATION": f"{key_server.base}/{KEY}.txt"})
    bad = run({"KEY_LOCATION": f"{key_server.base}/html.txt"}, "--json")

    assert good.returncode == 0, good.stdout + good.stderr
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["ok"] is False
    assert "CommandError: IndexNow delivery cannot work: key file" in bad.stderr


# --------------------------------------------------------------------------- Redis persistence


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start a redis-server of its own with the given options; return its URL."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*options: str) -> str:
        import shutil

        binary = shutil.which("redis-server")
        assert binary, "these tests need redis-server"
        port = services.free_port()
        process = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp_path), *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(process)
        url = f"redis://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis.from_url(url).ping()
                return url
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    yield start
    for process in started:
        process.terminate()
        process.wait(10)


def test_redis_without_persistence_warns(
    indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    indexnow_settings(DISPATCH="queue")

    output, error = run_check("--offline")

    assert error is None, output
    found = line(output, "WARN", "has no persistence (save '' and appendonly no)")
    assert "a restart of Redis loses queued jobs, scheduled retries" in found
    assert "hint: Turn on Redis persistence (appendonly yes" in output


@pytest.mark.parametrize(
    ("options", "status", "text"),
    [
        ((), "WARN", "shows no persistence: CONFIG GET is refused"),
        (("--appendonly", "yes"), "OK", "persists to disk (AOF)"),
    ],
)
def test_a_redis_that_refuses_config_is_asked_info(
    settings: Any,
    indexnow_settings: Callable[..., Any],
    own_redis: Callable[..., str],
    run_check: Any,
    options: tuple[str, ...],
    status: str,
    text: str,
) -> None:
    url = own_redis("--save", "", "--rename-command", "CONFIG", '""', *options)
    settings.RQ_QUEUES = {"default": {"URL": f"{url}/0"}}
    indexnow_settings(DISPATCH="queue")

    output, error = run_check("--offline")

    assert error is None, output
    line(output, status, text)


# --------------------------------------------------------------------------- wiring


def test_queue_dispatch_without_django_rq_fails(
    settings: Any, indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    settings.INSTALLED_APPS = [app for app in settings.INSTALLED_APPS if app != "django_rq"]
    indexnow_settings(DISPATCH="queue")

    output, error = run_check("--offline")

    assert error is not None
    assert "django_rq is not in INSTALLED_APPS" in str(error)
    assert "hint: Add 'django_rq' to INSTALLED_APPS." in output


def test_the_app_without_its_middleware_warns(
    settings: Any, indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    settings.MIDDLEWARE = []
    indexnow_settings(DISPATCH="sync")

    output, error = run_check("--offline")

    assert error is None, output
    line(output, "WARN", "indexnow.W004: indexnow_django.middleware.IndexNowMiddleware is not in")


# --------------------------------------------------------------------------- an http site


@pytest.fixture
def dev_server() -> Iterator[str]:
    """``manage.py runserver`` of the test project on http://127.0.0.1, its BASE_URL (a
    loopback host: ``ALLOW_PRIVATE_HOSTS``)."""
    port = services.free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "INDEXNOW_TEST_OVERRIDES": json.dumps({"BASE_URL": base, "ALLOW_PRIVATE_HOSTS": True}),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "django", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import requests

        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"{base}/", timeout=1)
                break
            except requests.ConnectionError:
                assert process.poll() is None, "runserver exited"
                assert time.monotonic() < deadline, "runserver did not start"
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(10)


def test_an_http_site_is_checked_over_http(
    indexnow_settings: Callable[..., Any], dev_server: str, run_check: Any
) -> None:
    indexnow_settings(BASE_URL=dev_server, ALLOW_PRIVATE_HOSTS=True)

    output, error = run_check()

    assert error is None, output
    host = dev_server.removeprefix("http://")
    line(output, "OK", f"{host}: key test…, key file {dev_server}/test….txt")
    line(output, "OK", f"key file {dev_server}/test….txt: 200, matches the key")
    assert "another host" not in output and "https://" + host not in output
    assert KEY not in output


@WORKERS_WRITE
@pytest.mark.worker
def test_a_scheduler_killed_with_its_worker_is_not_alive(
    queue_settings: Any,
    redis_conn: redis.Redis,
    start_worker: Callable[..., Any],
    run_check: Any,
) -> None:
    import signal

    from rq.scheduler import RQScheduler

    worker = start_worker()
    wait_for_scheduler_birth(redis_conn)
    holder = redis_conn.get(RQScheduler.get_locking_key("default"))
    scheduler_pid = RQScheduler.fetch(holder.decode(), redis_conn).pid
    os.killpg(worker.pid, signal.SIGKILL)  # the worker, its scheduler, its work horse
    worker.proc.wait(10)
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{scheduler_pid}") and time.monotonic() < deadline:
        time.sleep(0.05)

    output, error = run_check("--offline")

    assert error is None, output  # a warning: queued jobs wait, nothing is lost
    assert redis_conn.exists(RQScheduler.get_locking_key("default"))  # the lock outlives it
    found = line(output, "WARN", "no scheduler is alive for queue 'default'")
    assert f"(pid {scheduler_pid}) still holds its lock but its process is gone" in found


def test_urls_waiting_in_the_database_are_counted(
    indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    from indexnow_django.sending.pending import PendingSubmission

    indexnow_settings(DISPATCH="sync")
    output, _ = run_check("--offline")
    line(output, "OK", "no URLs wait in the database (table indexnow_pendingsubmission)")

    PendingSubmission.objects.create(
        batch_id="b1", urls="https://www.example.com/a/\nhttps://www.example.com/b/", reason="503"
    )
    output, error = run_check("--offline")

    assert error is None, output
    line(output, "WARN", "1 submission(s) wait in the database (table indexnow_pendingsubmission")
    assert "hint: A worker of class indexnow_django.worker.Worker queues them" in output


# --------------------------------------------------------------------------- a full Redis


def test_a_redis_that_refuses_writes_for_memory_fails_and_names_maxmemory(
    settings: Any,
    indexnow_settings: Callable[..., Any],
    private_redis: Any,
    run_check: Any,
) -> None:
    settings.RQ_QUEUES = {"default": {"URL": f"{private_redis.url}/0"}}
    indexnow_settings(DISPATCH="queue")
    conn = redis.Redis.from_url(private_redis.url)
    conn.config_set("maxmemory-policy", "noeviction")
    conn.config_set("maxmemory", 1)

    output, error = run_check("--offline")

    assert error is not None, output
    found = line(output, "FAIL", "refuses writes for memory")
    assert "of maxmemory 1 B, maxmemory-policy noeviction" in found
    assert "Raise maxmemory" in output

    conn.config_set("maxmemory", 0)  # room again
    output, error = run_check("--offline")
    line(output, "OK", "takes writes (used_memory")
    assert "refuses writes" not in output


def test_a_redis_near_its_maxmemory_warns(
    settings: Any,
    indexnow_settings: Callable[..., Any],
    private_redis: Any,
    run_check: Any,
) -> None:
    settings.RQ_QUEUES = {"default": {"URL": f"{private_redis.url}/0"}}
    indexnow_settings(DISPATCH="queue")
    conn = redis.Redis.from_url(private_redis.url)
    # Ten megabytes the check's own connections are a small part of, in small values: a
    # single 10 MB value is counted twice while Redis still holds the command that sent it.
    with conn.pipeline(transaction=False) as pipe:
        for n in range(100):
            pipe.set(f"ballast:{n}", "x" * 100_000)
        pipe.execute()
    used = int(conn.info("memory")["used_memory"])
    conn.config_set("maxmemory", int(used / 0.95))

    output, error = run_check("--offline")

    assert error is None, output
    line(output, "WARN", "% of its maxmemory (used_memory")


# --------------------------------------------------------------------------- delivery cannot happen now


def age_queued_job(conn: redis.Redis, job: Job, seconds: float) -> None:
    """Make ``job`` look queued ``seconds`` ago, as a job left without a worker would."""
    from rq.utils import utcformat

    when = datetime.now(timezone.utc) - timedelta(seconds=seconds)
    conn.hset(job.key, "enqueued_at", utcformat(when))


def test_no_worker_while_a_job_waits_over_a_minute_fails(
    indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    indexnow_settings(DISPATCH="queue")
    queue = Queue("default", connection=redis_conn)
    job = queue.enqueue("indexnow_django.jobs.deliver", ["/waiting/"])

    output, error = run_check("--offline")  # just queued: it may still be taken

    assert error is None, output
    line(output, "WARN", "no worker listens on queue 'default': jobs wait until one starts (0s")

    age_queued_job(redis_conn, job, 95)
    output, error = run_check("--offline")

    assert error is not None, output
    assert error.returncode == 1
    found = line(output, "FAIL", "no worker listens on queue 'default' and jobs wait")
    assert re.search(r"the oldest for 9[5-9]s, so nothing is delivered", found)
    assert "Start one: python manage.py rqworker default --with-scheduler" in output
    assert "no worker listens on queue 'default' and jobs wait" in str(error)


def test_no_worker_and_nothing_waiting_warns(
    indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    indexnow_settings(DISPATCH="queue")

    output, error = run_check("--offline")

    assert error is None, output
    found = line(output, "WARN", "no worker listens on queue 'default': jobs wait until one")
    assert found.endswith("starts; after 60s of waiting this check fails")


@WORKERS_WRITE
@pytest.mark.worker
def test_a_worker_left_in_dry_run_fails_when_this_process_sends(
    queue_settings: Any,
    indexnow_settings: Callable[..., Any],
    start_worker: Callable[..., Any],
    run_check: Any,
) -> None:
    """DRY_RUN turned off for the web process, the worker not restarted: it only logs."""
    worker = start_worker({**same_settings(queue_settings), "DRY_RUN": True})

    output, error = run_check("--offline")

    assert error is not None, output
    found = line(output, "FAIL", f"worker {worker.name} on ")
    assert found.endswith("; DRY_RUN is True there, False here: it logs instead of sending")
    assert "restart the workers after every change to the settings" in output
    assert "was started with other INDEXNOW settings" in str(error)


def test_a_dead_redis_cache_and_throttle_are_not_ok(
    settings: Any, indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    """Redis is stopped: the queue fails, and the debounce cache and the throttle on the
    same Redis say that they cannot reach it."""
    port = services.free_port()  # nothing listens there
    settings.RQ_QUEUES = {"default": {"URL": f"redis://127.0.0.1:{port}/0"}}
    settings.CACHES = {
        **settings.CACHES,
        "gone": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/1",
        },
    }
    indexnow_settings(
        DISPATCH="queue",
        DEBOUNCE={"CACHE": "gone", "TTL": 600},
        THROTTLE={"MAX_REQUESTS_PER_MINUTE": 10},
    )

    output, error = run_check("--offline")

    assert error is not None
    line(output, "FAIL", f"Redis at 127.0.0.1:{port}/0 is unreachable")
    found = line(output, "WARN", "cache 'gone' (django.core.cache.backends.redis.RedisCache)")
    assert "cannot be reached (" in found and "nothing is debounced while it is down" in found
    found = line(output, "WARN", "throttle: at most 10 POSTs a minute per engine")
    assert found.endswith("POSTs go out unthrottled")
    assert "OK    cache 'gone'" not in output and "OK    throttle" not in output


def test_the_cache_and_throttle_lines_say_whether_they_reach_and_share(
    indexnow_settings: Callable[..., Any], redis_conn: redis.Redis, run_check: Any
) -> None:
    indexnow_settings(
        DISPATCH="queue",
        DEBOUNCE={"CACHE": "shared", "TTL": 600},
        THROTTLE={"MAX_REQUESTS_PER_MINUTE": 10},
    )
    output, _ = run_check("--offline")
    line(output, "OK", "cache 'shared' (django.core.cache.backends.redis.RedisCache), TTL 600s: ")
    assert "shared with workers, reachable" in output
    found = line(output, "OK", "throttle: at most 10 POSTs a minute per engine, one every 6s")
    assert found.endswith(
        "kept in the cache 'shared' (RedisCache): shared by every process that uses this cache"
    )

    indexnow_settings(DISPATCH="sync", DEBOUNCE={"CACHE": "default", "TTL": 600})
    output, _ = run_check("--offline")
    found = line(output, "OK", "throttle: at most 10 POSTs a minute per engine")
    assert found.endswith(
        "kept in the cache 'default' (LocMemCache): per process, each process (worker) keeps "
        "a budget of its own"
    )


# --------------------------------------------------------------------------- tasks mode


def tasks_mode(indexnow_settings: Callable[..., Any], **changes: Any) -> None:
    indexnow_settings(
        DISPATCH="tasks", TASKS={"BACKEND": "database", "QUEUE_NAME": "default"}, **changes
    )


@pytest.mark.django_db(transaction=True)
def test_tasks_waiting_over_a_minute_fail(
    indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    """A save waits in django-tasks-db's table and no db_worker takes it."""
    from django_tasks_db.models import DBTaskResult

    from indexnow_django.units.dispatch import dispatch

    tasks_mode(indexnow_settings, DEBOUNCE={"CACHE": "shared", "TTL": 600})
    dispatch(["/waiting/"])  # enqueued without run_after: the backend's far-future marker

    output, error = run_check("--offline")
    assert error is None, output
    line(output, "OK", "tasks of this app: 1 waiting to run, 0 scheduled")

    earlier = datetime.now(timezone.utc) - timedelta(minutes=2)
    DBTaskResult.objects.update(enqueued_at=earlier)
    output, error = run_check("--offline")

    assert error is not None, output
    found = line(output, "FAIL", "tasks of this app: 1 waiting to run")
    assert re.search(r"the oldest has waited 1[2-3]\ds: no worker takes them", found)
    assert "python manage.py db_worker --backend database --queue-name default" in output


@pytest.mark.django_db(transaction=True)
def test_a_retry_due_over_a_minute_ago_fails_and_a_failed_task_warns(
    indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    from django_tasks_db.models import DBTaskResult

    from indexnow_django.compat.tasks import tasks_framework
    from indexnow_django.units.dispatch import dispatch

    status = tasks_framework().status  # type: ignore[union-attr]
    tasks_mode(indexnow_settings, DEBOUNCE={"CACHE": "shared", "TTL": 600})
    dispatch(["/failed/"])
    DBTaskResult.objects.update(status=status.FAILED)

    output, error = run_check("--offline")

    assert error is None, output
    line(output, "OK", "tasks of this app: 0 waiting to run, 0 scheduled")
    line(output, "WARN", "1 task(s) of this app failed")
    assert "Task Results" in output

    dispatch(["/retry/"])
    DBTaskResult.objects.filter(status=status.READY).update(
        run_after=datetime.now(timezone.utc) - timedelta(seconds=90)
    )
    output, error = run_check("--offline")
    assert error is not None, output
    line(output, "FAIL", "tasks of this app: 1 waiting to run")


@pytest.mark.django_db(transaction=True)
def test_the_no_redis_recipe_gets_a_true_w002(
    indexnow_settings: Callable[..., Any], run_check: Any
) -> None:
    """docs/tasks.md: LocMemCache and one db_worker. The check says what holds: one worker
    debounces, a second would not see what the first sent."""
    tasks_mode(indexnow_settings, DEBOUNCE={"CACHE": "default", "TTL": 600})

    output, error = run_check("--offline")

    assert error is None, output
    found = line(output, "WARN", "indexnow.W002: INDEXNOW['DEBOUNCE']['CACHE'] is 'default'")
    assert "each worker debounces only what it sent itself" in found
    assert "with more than one worker an engine may receive a URL again" in found
    assert "at every save" not in found
    assert "SILENCED_SYSTEM_CHECKS = ['indexnow.W002']" in output


# --------------------------------------------------------------------------- engines


@pytest.fixture
def sync_site(
    settings: Any, indexnow_settings: Callable[..., Any], key_server: KeyServer
) -> Callable[..., Any]:
    """A site that sends in process, its key file on the key server: the check passes
    unless an engine is wrong. Returns ``indexnow_settings``."""
    settings.RQ_QUEUES = {}
    indexnow_settings(DISPATCH="auto", KEY_LOCATION=f"{key_server.base}/{KEY}.txt")
    return indexnow_settings


def test_the_loopback_engine_is_there_and_nothing_is_submitted_to_find_out(
    sync_site: Callable[..., Any], engine: LoopbackEngine, run_check: Any
) -> None:
    output, error = run_check()

    assert error is None, output
    name = endpoint_name(engine.url)
    assert line(output, "OK", f"{name}: {engine.url} is there").endswith(
        "(a GET without URLs answered 200)"
    )
    [probe] = engine.requests
    assert (probe.method, probe.path, probe.body) == ("GET", "/indexnow", b"")
    assert engine.posts == []


def test_an_engine_where_nothing_listens_fails_naming_it(
    sync_site: Callable[..., Any], engine: LoopbackEngine, run_check: Any
) -> None:
    typo = f"http://127.0.0.1:{services.free_port()}/indexnow"
    sync_site(ENGINES=[engine.url, typo])

    output, error = run_check()

    assert error is not None
    assert f"{endpoint_name(typo)}: {typo} cannot be reached: connection refused" in str(error)
    line(output, "FAIL", f"{typo} cannot be reached: connection refused")
    assert "host, port and path" in line(output, "hint:", "ENGINES")
    line(output, "OK", f"{engine.url} is there")


def test_an_engine_that_answers_404_on_its_path_fails_naming_it(
    sync_site: Callable[..., Any], run_check: Any
) -> None:
    with LoopbackEngine(default=Reply(404, body="Not Found")) as missing:
        typo = missing.url.replace("/indexnow", "/indexnwo")
        sync_site(ENGINES=[typo])

        output, error = run_check()

        # Asked as submissions ask too, in case it routes POSTs alone: nothing to accept.
        assert [request.method for request in missing.requests] == ["GET", "POST"]
        assert missing.requests[1].json == {}
    assert error is not None
    assert f"{typo} answered 404 Not Found: there is no IndexNow endpoint at that path" in str(
        error
    )
    line(output, "FAIL", f"{endpoint_name(typo)}: {typo} answered 404")


def test_an_engine_that_routes_posts_alone_is_there(
    sync_site: Callable[..., Any], run_check: Any
) -> None:
    with LoopbackEngine(default=Reply(400, body="Bad Request")) as posts_only:
        posts_only.queue_replies(Reply(404, body="Not Found"))  # its answer to a GET
        sync_site(ENGINES=[posts_only.url])

        output, error = run_check()

        assert [request.method for request in posts_only.requests] == ["GET", "POST"]
    assert error is None, output
    line(output, "OK", f"{posts_only.url} is there (a POST without URLs answered 400)")


def test_offline_probes_no_engine(
    sync_site: Callable[..., Any], engine: LoopbackEngine, run_check: Any
) -> None:
    output, error = run_check("--offline")

    assert error is None, output
    line(output, "OK", f"{endpoint_name(engine.url)}: {engine.url}")
    assert engine.requests == []
