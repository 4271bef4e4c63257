"""Real services for the test suite: a redis-server and a loopback engine.

Each test process starts its own (``tests/plugin.py``, before pytest-django
reads the settings), with the database it uses, and exports their addresses in
the environment: ``tests.settings`` only reads them there, so worker processes
started by a test (which import the same settings) and a project run by
Django's test runner from a test reach the same Redis and post to the same
engine, where the test reads what arrived. Under pytest-xdist each worker
process is such a test process: its own redis-server, engine and database, so
that workers never flush, read or lock each other's.

What a test uses, in the process that runs it:

- Redis: the ``redis_url`` fixture (``redis://127.0.0.1:PORT``, no database
  part; the queue is database 0, the ``shared`` cache database 1) or
  ``settings.REDIS_URL``;
- the engine: the ``engine`` fixture (``engine.url``, what it received);
- the database: ``settings.DATABASES`` (SQLite file ``INDEXNOW_TEST_DB``, or
  PostgreSQL database ``INDEXNOW_TEST_PG_NAME``), the same for the processes a
  test starts;
- a port for a server of its own: :func:`free_port`.

``REDIS_URL`` set by the caller wins: then no redis-server is started (and the
suite runs in one process: parallel workers would flush each other's queues).
``python -m tests.services COMMAND...`` runs a command with the services
started, as the suite would (``python -m tests.services python -m django shell
--settings tests.settings``).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import redis

from indexnow_django.testing import LoopbackEngine

_engine: LoopbackEngine | None = None
_redis_server: RedisServer | None = None

#: The variables of the services a test session started (as opposed to the ones its
#: caller gave), comma-separated: an xdist worker inherits the controller's environment
#: and starts its own in their place (:func:`forget_inherited`).
STARTED = "INDEXNOW_TEST_STARTED"


def _mark_started(name: str) -> None:
    names = [n for n in os.environ.get(STARTED, "").split(",") if n]
    if name not in names:
        os.environ[STARTED] = ",".join([*names, name])


def forget_inherited() -> None:
    """In a process that inherited a parent session's environment (an xdist worker): drop
    the addresses of the services that session started, so that :func:`start` starts this
    process's own. Addresses the caller of the whole run gave stay."""
    for name in os.environ.pop(STARTED, "").split(","):
        if name:
            os.environ.pop(name, None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:
    """In the child: ask Linux to stop the server when the test process dies, however it dies."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class RedisServer:
    """A redis-server of the test's own, on a free port: stopped, frozen and restarted for real."""

    def __init__(self, *args: str) -> None:
        """``args``: more redis-server options (``"--replicaof", "127.0.0.1", "6379"``)."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError(
                "The test suite needs Redis: install redis-server (apt-get install redis-server) "
                "or set REDIS_URL to a Redis it may flush."
            )
        self.binary = binary
        self.port = free_port()
        self.workdir = tempfile.mkdtemp(prefix="indexnow-redis-")
        self.args = tuple(args)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>`` (no database part)."""
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> RedisServer:
        """Start (or start again, on the same port), and return once it answers."""
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.workdir,
                "--loglevel",
                "warning",
                *self.args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis.from_url(self.url, socket_timeout=1).ping()
                return self
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        """Stop it for real (the port refuses connections until :meth:`start`)."""
        if self.proc is not None and self.proc.poll() is None:
            self.thaw()
            self.proc.terminate()
            self.proc.wait(5)

    def kill(self) -> None:
        """SIGKILL, as a machine that dies: nothing is written, no client is told."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(5)

    def freeze(self) -> None:
        """SIGSTOP: connections are accepted by the kernel and never answered."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)


class SentinelGroup:
    """A Redis master, its replica and a Sentinel watching them, each on a free port.

    The Sentinel (``redis-server --sentinel``) calls the master down after
    :attr:`DOWN_AFTER_MS` and promotes the replica. :meth:`rq_queue` is the
    ``RQ_QUEUES`` entry that reaches the master through the Sentinel.
    """

    SERVICE = "indexnow-test"
    DOWN_AFTER_MS = 1000

    def __init__(self) -> None:
        self.master = RedisServer()
        self.replica = RedisServer("--replicaof", "127.0.0.1", str(self.master.port))
        self.sentinel_port = free_port()
        self.workdir = tempfile.mkdtemp(prefix="indexnow-sentinel-")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> SentinelGroup:
        self.master.start()
        self.replica.start()
        config = Path(self.workdir) / "sentinel.conf"
        config.write_text(
            f"port {self.sentinel_port}\n"
            "bind 127.0.0.1\n"
            f"dir {self.workdir}\n"
            f"sentinel monitor {self.SERVICE} 127.0.0.1 {self.master.port} 1\n"
            f"sentinel down-after-milliseconds {self.SERVICE} {self.DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {self.SERVICE} 10000\n"
            f"sentinel parallel-syncs {self.SERVICE} 1\n"
        )
        self.proc = subprocess.Popen(
            [self.master.binary, str(config), "--sentinel", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                # The replica is in sync and the Sentinel knows about it.
                replicas = self.sentinel().sentinel_slaves(self.SERVICE)
                if replicas and replicas[0].get("master-link-status") == "ok":
                    return self
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the Sentinel did not see the replica in sync within 20 s")
            time.sleep(0.1)

    def sentinel(self) -> redis.Redis:
        return redis.Redis(port=self.sentinel_port, socket_timeout=1, decode_responses=True)

    def master_port(self) -> int | None:
        """The port of the master the Sentinel names now."""
        try:
            address = self.sentinel().sentinel_get_master_addr_by_name(self.SERVICE)
        except redis.RedisError:
            return None
        return int(address[1]) if address else None

    def rq_queue(self, db: int = 0) -> dict[str, object]:
        """An ``RQ_QUEUES`` entry on this group's master, found through the Sentinel."""
        return {
            "SENTINELS": [["127.0.0.1", self.sentinel_port]],
            "MASTER_NAME": self.SERVICE,
            "DB": db,
            "SOCKET_TIMEOUT": 2,
            "CONNECTION_KWARGS": {"socket_connect_timeout": 1},
        }

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)
        for server in (self.replica, self.master):
            server.stop()


def _start_redis() -> str:
    global _redis_server
    server = _redis_server = RedisServer().start()
    atexit.register(_stop_redis)
    return server.url


def suite_redis() -> RedisServer:
    """The redis-server the suite started, to stop and start again for real."""
    if _redis_server is None:
        raise RuntimeError(
            "This test stops and restarts the suite's Redis: run it without REDIS_URL, "
            "so that the suite starts a redis-server of its own."
        )
    return _redis_server


def _stop_redis() -> None:
    if _redis_server is not None:
        _redis_server.stop()


def ensure_redis() -> str:
    """The Redis URL (no db part) the suite uses, starting a redis-server if needed."""
    url = os.environ.get("REDIS_URL")
    if not url:
        url = _start_redis()
        os.environ["REDIS_URL"] = url
        _mark_started("REDIS_URL")
    return url.rstrip("/")


def redis_is_ours() -> bool:
    """True when the suite started its own redis-server (and may stop it)."""
    return _redis_server is not None


def redis_process() -> subprocess.Popen[bytes] | None:
    return _redis_server.proc if _redis_server is not None else None


RUN_DIR = "INDEXNOW_TEST_RUN_DIR"
_run_dir: Path | None = None


def run_dir() -> Path:
    """A folder the processes of one run share (an xdist controller and its workers),
    removed when the process that made it stops: what one worker works out for all."""
    global _run_dir
    path = os.environ.get(RUN_DIR)
    if not path:
        _run_dir = Path(tempfile.mkdtemp(prefix="indexnow-run-"))
        path = os.environ[RUN_DIR] = str(_run_dir)
    return Path(path)


@contextlib.contextmanager
def run_lock(name: str) -> Iterator[Path]:
    """Hold the run's lock ``name`` (one process of the run at a time) and give the run's
    folder: for what one process works out for all of them, once (a build, a collection)."""
    with open(run_dir() / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield run_dir()


def start() -> None:
    """Start what a run of the suite needs, unless a parent process did (see the module)."""
    run_dir()
    ensure_redis()
    ensure_engine()
    if os.environ.get("INDEXNOW_TEST_DATABASE", "sqlite") == "postgres":
        ensure_postgres()
    else:
        ensure_database()


def stop() -> None:
    """Stop what :func:`start` started in this process."""
    global _engine
    if _engine is not None:
        _engine.stop()
        _engine = None
    _stop_redis()
    if _run_dir is not None:
        shutil.rmtree(_run_dir, ignore_errors=True)


def address(name: str) -> str:
    """The value of the environment variable ``name`` that :func:`start` exported."""
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(
            f"{name} is not set: the test settings read the addresses of the services that "
            "the test session starts. Run the suite with python -m pytest, or a command with "
            "python -m tests.services COMMAND..."
        )
    return value


def ensure_engine() -> str:
    """The loopback engine's endpoint, starting it in this process if no parent did."""
    global _engine
    url = os.environ.get("INDEXNOW_TEST_ENGINE_URL")
    if url:
        return url
    _engine = LoopbackEngine().start()
    os.environ["INDEXNOW_TEST_ENGINE_URL"] = _engine.url
    _mark_started("INDEXNOW_TEST_ENGINE_URL")
    return _engine.url


def engine() -> LoopbackEngine:
    """The engine this (pytest) process started."""
    if _engine is None:
        raise RuntimeError("the loopback engine runs in the pytest process, not here")
    return _engine


def ensure_database() -> str:
    """A SQLite file shared by the pytest process and the worker processes it starts."""
    path = os.environ.get("INDEXNOW_TEST_DB")
    if not path:
        path = str(Path(tempfile.mkdtemp(prefix="indexnow-db-")) / "test.sqlite3")
        os.environ["INDEXNOW_TEST_DB"] = path
        _mark_started("INDEXNOW_TEST_DB")
    return path


POSTGRES = {"HOST": "127.0.0.1", "PORT": "5432", "USER": "postgres"}


def ensure_postgres() -> str:
    """The name of this run's PostgreSQL database (shared with the workers it starts).

    Checks that a PostgreSQL answers on 127.0.0.1:5432 (user postgres, trust
    auth) and fails with a message that says so when none does.
    """
    name = os.environ.get("INDEXNOW_TEST_PG_NAME")
    if name:
        return name
    try:
        import psycopg
    except ImportError:
        raise RuntimeError(
            "INDEXNOW_TEST_DATABASE=postgres needs psycopg: pip install 'psycopg[binary]>=3.1'"
        ) from None
    try:
        psycopg.connect(
            host=POSTGRES["HOST"],
            port=int(POSTGRES["PORT"]),
            user=POSTGRES["USER"],
            dbname="postgres",
            connect_timeout=5,
        ).close()
    except psycopg.OperationalError as error:
        raise RuntimeError(
            "INDEXNOW_TEST_DATABASE=postgres, but no PostgreSQL answers on "
            f"{POSTGRES['HOST']}:{POSTGRES['PORT']} for user {POSTGRES['USER']} without a "
            f"password: start one (trust auth) or leave the variable unset for SQLite. ({error})"
        ) from None
    # The process id keeps apart the runs on one server, and the xdist workers of a run.
    name = f"indexnow_tests_{os.getpid()}"
    os.environ["INDEXNOW_TEST_PG_NAME"] = name
    _mark_started("INDEXNOW_TEST_PG_NAME")
    return name


ROOT = Path(__file__).resolve().parents[1]


def django_env(
    settings: str = "tests.settings", path: tuple[str | Path, ...] = (), **variables: str
) -> dict[str, str]:
    """The environment of a ``python -m django`` process: ``settings``, importable from
    ``path`` and the repository root, with ``variables`` set."""
    python_path = [*map(str, path), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings,
        "PYTHONPATH": os.pathsep.join(p for p in python_path if p),
        **variables,
    }


def run_django(
    *args: str,
    settings: str = "tests.settings",
    path: tuple[str | Path, ...] = (),
    stdin: str | None = None,
    timeout: float = 120,
    **variables: str,
) -> subprocess.CompletedProcess[str]:
    """``python -m django <args>`` in a process of its own, as a shell or cron runs a
    command: its exit code and output are what a user would see."""
    return subprocess.run(
        [sys.executable, "-m", "django", *args],
        cwd=ROOT,
        env=django_env(settings, path, **variables),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


if __name__ == "__main__":
    start()
    try:
        sys.exit(subprocess.call(sys.argv[1:]) if sys.argv[1:] else 0)
    finally:
        stop()
