"""Real rq workers for tests: ``python -m django rqworker`` in a subprocess.

A worker started here imports ``tests.settings`` like the pytest process, so
it reaches the same Redis, the same SQLite file and the same loopback engine
(their addresses travel in the environment). ``overrides`` is merged over
``INDEXNOW`` in the worker (``INDEXNOW_TEST_OVERRIDES``), e.g. short retry
delays::

    def test_retry(start_worker, indexnow_settings):
        overrides = {"DISPATCH": "queue", "RETRY": {"BASE_DELAY": 1, "MULTIPLIER": 1}}
        indexnow_settings(**overrides)        # the same settings in this process
        worker = start_worker(overrides)      # returns once it listens (and schedules)
        ...

The fixture waits until the worker is registered in Redis (and, with the
scheduler, until some worker holds the scheduler lock), stops every worker it
started after the test (SIGTERM, wait, then SIGKILL of its process group) and
adds each worker's output to the report of a failed test.

Loaded as a pytest plugin from ``tests/conftest.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis
from rq.scheduler import RQScheduler
from rq.worker import Worker as RQWorker

ROOT = Path(__file__).resolve().parent.parent

_workers_key = pytest.StashKey[list["WorkerProcess"]]()


class WorkerProcess:
    """One ``manage.py rqworker`` subprocess and its output file."""

    def __init__(
        self,
        *,
        queues: Sequence[str] = ("default",),
        overrides: Mapping[str, Any] | None = None,
        with_scheduler: bool = True,
        log_dir: Path,
        name: str | None = None,
        extra_env: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.name = name or f"test-worker-{uuid.uuid4().hex[:8]}"
        self.queues = tuple(queues)
        self.with_scheduler = with_scheduler
        self.overrides = dict(overrides or {})
        self.log_path = log_dir / f"{self.name}.log"
        self.extra_env = dict(extra_env or {})
        self.extra_args = tuple(extra_args)
        self.proc: subprocess.Popen[bytes] | None = None

    def environment(self) -> dict[str, str]:
        """The worker process's environment: the test settings, this worker's overrides."""
        env = dict(os.environ)
        env.update(
            DJANGO_SETTINGS_MODULE="tests.settings",
            INDEXNOW_TEST_OVERRIDES=json.dumps(self.overrides),
            PYTHONUNBUFFERED="1",
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        )
        env.update(self.extra_env)
        return env

    def start(self) -> WorkerProcess:
        env = self.environment()
        command = [sys.executable, "-m", "django", "rqworker", *self.queues, "--name", self.name]
        if self.with_scheduler:
            command.append("--with-scheduler")
        command.extend(self.extra_args)
        self.spawn(command, env)
        return self

    def spawn(self, command: list[str], env: dict[str, str]) -> None:
        """Start ``command`` in a session of its own, its output to the log file."""
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def output(self) -> str:
        """Everything the worker wrote so far (its log lines included)."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_until_ready(self, conn: redis.Redis, timeout: float = 30.0) -> None:
        """Return once the worker is registered (and a scheduler holds the queues' lock)."""
        deadline = time.monotonic() + timeout
        lock_keys = [RQScheduler.get_locking_key(name) for name in self.queues]
        while True:
            if not self.running():
                raise RuntimeError(f"worker {self.name} exited early:\n{self.output()}")
            names = {w.name for w in RQWorker.all(connection=conn)}
            scheduling = not self.with_scheduler or all(conn.exists(key) for key in lock_keys)
            if self.name in names and scheduling:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"worker {self.name} not ready after {timeout:g}s:\n{self.output()}"
                )
            time.sleep(0.05)

    def wait_for_output(self, text: str, timeout: float = 15.0) -> str:
        """Block until ``text`` appears in the worker's output; return the output."""
        deadline = time.monotonic() + timeout
        while True:
            output = self.output()
            if text in output:
                return output
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{text!r} not in the output of {self.name} after {timeout:g}s:\n{output}"
                )
            time.sleep(0.05)

    def children(self) -> list[int]:
        """The pids of the worker's child processes (its work horse, its scheduler)."""
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                # "pid (comm) state ppid ...": comm may hold spaces, so split after it.
                fields = stat.read_text().rpartition(")")[2].split()
                if int(fields[1]) == self.pid:
                    children.append(int(stat.parent.name))
        return children

    def kill(self) -> None:
        """SIGKILL the whole worker at once, as a machine that dies would: the worker is
        stopped first, so that it cannot see its work horse (in a session of its own) die
        and fail the job before its own end, as it may on a busy machine."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGSTOP)
        for pid in [*self.children(), self.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert self.proc is not None
        self.proc.wait(5)

    def cold_stop(self) -> None:
        """rq's cold shutdown, as Ctrl+C twice or a second SIGTERM gives it: the work
        horse is killed and the worker exits. rq ignores a second signal within 1 s of
        the first one it handled (when, on a busy machine, is its own): SIGTERM again
        until it says it shuts down cold."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 30
        while not self._cold():
            assert time.monotonic() < deadline, f"no cold shutdown:\n{self.output()}"
            self.proc.send_signal(signal.SIGTERM)
            # Told within a moment when it was not ignored (one signal at a time: a
            # signal more while it shuts down is one more shutdown under way).
            until = time.monotonic() + 1.5
            while not self._cold() and time.monotonic() < until:
                time.sleep(0.05)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(30)
        # rq has killed the horse and said so; a teardown that lingers after that (on a
        # busy machine, now and then) is ended as a supervisor would end it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(5)

    def _cold(self) -> bool:
        return "cold shut down" in self.output().lower() or not self.running()

    def stop(self, timeout: float = 15.0) -> None:
        """Warm shutdown (SIGTERM: the current job finishes), then SIGKILL the whole group."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout)
        # The work horse and the scheduler are forked children in the same session.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.wait(5)


class DbWorkerProcess(WorkerProcess):
    """One ``manage.py db_worker`` subprocess (django-tasks-db), polling every 0.2 s."""

    def __init__(self, *, backend: str = "database", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.backend = backend

    def start(self) -> DbWorkerProcess:
        env = self.environment()
        command = [
            sys.executable,
            "-m",
            "django",
            "db_worker",
            "--backend",
            self.backend,
            "--queue-name",
            ",".join(self.queues),
            "--interval",
            "0.2",
            "--no-startup-delay",
            "--no-reload",
            "--worker-id",
            self.name,
            *self.extra_args,
        ]
        self.spawn(command, env)
        self.wait_for_output("Starting worker", timeout=30)
        return self


class CeleryWorkerProcess(WorkerProcess):
    """One ``celery -A tests.celeryapp worker`` subprocess (a prefork pool of one), as a
    site runs it: it never imports ``indexnow_django.tasks`` itself."""

    def start(self) -> CeleryWorkerProcess:
        env = self.environment()
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "tests.celeryapp",
            "worker",
            "-Q",
            ",".join(self.queues),
            "-n",
            f"{self.name}@%h",
            "--concurrency",
            "1",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel",
            "INFO",
            *self.extra_args,
        ]
        self.spawn(command, env)
        self.wait_for_output(" ready.", timeout=60)
        return self


@pytest.fixture
def start_celery_worker(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., CeleryWorkerProcess]]:
    """Start a real Celery worker on the suite's Redis (``CELERY_BROKER_URL``):
    ``start_celery_worker(overrides=None, *, queues=("celery",), extra_env=None)``; stopped
    after the test. The broker and result databases are emptied first."""
    from django.conf import settings

    for url in (settings.CELERY_BROKER_URL, settings.CELERY_RESULT_BACKEND):
        with contextlib.closing(redis.Redis.from_url(url)) as conn:
            conn.flushdb()
    started: list[WorkerProcess] = request.node.stash.setdefault(_workers_key, [])
    log_dir = tmp_path / "workers"
    log_dir.mkdir(exist_ok=True)

    def start(
        overrides: Mapping[str, Any] | None = None,
        *,
        queues: Sequence[str] = ("celery",),
        extra_env: Mapping[str, str] | None = None,
    ) -> CeleryWorkerProcess:
        worker = CeleryWorkerProcess(
            queues=queues, overrides=overrides, log_dir=log_dir, extra_env=extra_env
        )
        started.append(worker)
        return worker.start()

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def start_db_worker(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., DbWorkerProcess]]:
    """Start a real django-tasks-db worker: ``start_db_worker(overrides=None, *,
    backend="database", queues=("default",), extra_env=None)``; stopped after the test."""
    started: list[WorkerProcess] = request.node.stash.setdefault(_workers_key, [])
    log_dir = tmp_path / "workers"
    log_dir.mkdir(exist_ok=True)

    def start(
        overrides: Mapping[str, Any] | None = None,
        *,
        backend: str = "database",
        queues: Sequence[str] = ("default",),
        extra_env: Mapping[str, str] | None = None,
    ) -> DbWorkerProcess:
        worker = DbWorkerProcess(
            backend=backend,
            queues=queues,
            overrides=overrides,
            log_dir=log_dir,
            extra_env=extra_env,
        )
        started.append(worker)
        return worker.start()

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def start_worker(
    request: pytest.FixtureRequest, redis_conn: redis.Redis, tmp_path: Path
) -> Iterator[Callable[..., WorkerProcess]]:
    """Start a real rq worker: ``start_worker(overrides=None, *, queues=("default",),
    with_scheduler=True, extra_env=None, extra_args=(), conn=None)``; stopped after the test.

    ``extra_args`` go to ``manage.py rqworker`` (e.g. ``["--worker-class", "rq.Worker"]``);
    ``conn``: the Redis the worker registers in, when its queue is not the suite's.

    Depends on ``redis_conn``, so the queue database is empty when the first
    worker starts (no stale scheduler lock or registered worker).
    """
    started: list[WorkerProcess] = request.node.stash.setdefault(_workers_key, [])
    log_dir = tmp_path / "workers"
    log_dir.mkdir(exist_ok=True)

    def start(
        overrides: Mapping[str, Any] | None = None,
        *,
        queues: Sequence[str] = ("default",),
        with_scheduler: bool = True,
        extra_env: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
        timeout: float = 30.0,
        conn: redis.Redis | None = None,
    ) -> WorkerProcess:
        worker = WorkerProcess(
            queues=queues,
            overrides=overrides,
            with_scheduler=with_scheduler,
            log_dir=log_dir,
            extra_env=extra_env,
            extra_args=extra_args,
        ).start()
        started.append(worker)
        worker.wait_until_ready(conn if conn is not None else redis_conn, timeout)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, Any]:
    """Show the output of the test's workers when it fails."""
    report = yield
    if report.failed:
        for worker in item.stash.get(_workers_key, []):
            report.sections.append((f"worker {worker.name} output", worker.output() or "(nothing)"))
    return report
