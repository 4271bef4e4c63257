"""Helpers for testing a site that uses indexnow_django.

:class:`LoopbackEngine` is a real HTTP server on 127.0.0.1 that stands in for
the IndexNow engines: point ``INDEXNOW["ENGINES"]`` at :attr:`LoopbackEngine.url`,
script its answers, and read back every request it received. It is the engine
this project's own test suite and demo use.

:func:`capture_submissions` records what the code under test submits (the URLs
each unit of work flushes), instead of queuing or sending them, the way
``django.core.mail.outbox`` records mail.

Importing this module imports no Django code; :func:`capture_submissions`
does when it is called.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "EngineRequest",
    "LoopbackEngine",
    "Reply",
    "Submission",
    "SubmissionOutbox",
    "capture_submissions",
]


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    status: int = 200
    body: str | bytes = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Seconds to wait before answering (to simulate a hanging engine).
    delay: float = 0.0
    content_type: str = "text/plain; charset=utf-8"
    #: The body is sent this many times over (a huge answer without holding it in memory).
    repeat: int = 1
    #: Seconds between two bytes of the body (an engine that trickles its answer).
    trickle: float = 0.0


@dataclass(frozen=True)
class EngineRequest:
    """One request the engine received."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    received_at: float
    #: How the engine answered it.
    reply: Reply = field(default_factory=Reply)

    @property
    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))

    @property
    def urls(self) -> list[str]:
        """The ``urlList`` of the POST body."""
        return list(self.json.get("urlList", []))


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        # The client may close the connection without reading the whole answer.
        with contextlib.suppress(ConnectionError):
            super().handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        engine = self.server.engine
        request = EngineRequest(
            self.command, self.path, dict(self.headers.items()), body, time.time()
        )
        reply = engine._next_reply(request)
        if reply.delay:
            engine._wait(reply.delay)
        payload = reply.body if isinstance(reply.body, bytes) else reply.body.encode("utf-8")
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(payload) * reply.repeat))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            for _ in range(reply.repeat):
                if not reply.trickle:
                    self.wfile.write(payload)
                    continue
                for byte in range(len(payload)):
                    self.wfile.write(payload[byte : byte + 1])
                    self.wfile.flush()
                    if engine._stopping.wait(reply.trickle):
                        return
        except OSError:
            pass  # the client gave up (timeout, or it read enough): nothing to answer

    do_POST = _handle
    do_GET = _handle
    do_HEAD = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    engine: LoopbackEngine


class LoopbackEngine:
    """An IndexNow engine on ``127.0.0.1`` that records requests and answers as scripted.

    Use as a context manager, or call :meth:`start` and :meth:`stop`::

        with LoopbackEngine() as engine:
            engine.queue_replies(Reply(429, headers={"Retry-After": "2"}))
            ...  # code that submits to engine.url
            assert engine.posted_urls() == ["https://www.example.com/a/"]

    Replies queued with :meth:`queue_replies` are used in order; after them
    :attr:`default` (200) answers every request.
    """

    def __init__(
        self,
        port: int = 0,
        default: Reply | None = None,
        on_request: Callable[[EngineRequest], None] | None = None,
    ) -> None:
        self.default = default or Reply(200)
        #: Called with each request (and its :attr:`EngineRequest.reply`) as it arrives.
        self.on_request = on_request
        self.requests: list[EngineRequest] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.engine = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The endpoint to put in ``INDEXNOW["ENGINES"]``."""
        return f"http://127.0.0.1:{self.port}/indexnow"

    def start(self) -> LoopbackEngine:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="loopback-engine", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LoopbackEngine:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def _next_reply(self, request: EngineRequest) -> Reply:
        with self._lock:
            reply = self._replies.popleft() if self._replies else self.default
            request = replace(request, reply=reply)
            self.requests.append(request)
            self._lock.notify_all()
        if self.on_request is not None:
            self.on_request(request)
        return reply

    def queue_replies(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies``, in order."""
        with self._lock:
            self._replies.extend(replies)

    def reset(self) -> None:
        """Forget recorded requests and scripted replies; answer 200 again."""
        with self._lock:
            self.requests.clear()
            self._replies.clear()
            self.default = Reply(200)

    @property
    def posts(self) -> list[EngineRequest]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST"]

    def posted_urls(self) -> list[str]:
        """Every URL of every POST received, in order."""
        return [url for post in self.posts for url in post.urls]

    def wait_for_posts(self, count: int, timeout: float = 10.0) -> list[EngineRequest]:
        """Block until at least ``count`` POSTs arrived (or ``timeout``); return them all."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                posts = [r for r in self.requests if r.method == "POST"]
                remaining = deadline - time.monotonic()
                if len(posts) >= count or remaining <= 0:
                    return posts
                self._lock.wait(remaining)

    def __iter__(self) -> Iterator[EngineRequest]:
        return iter(self.posts)


# --- Capturing what a site submits, in its own tests -------------------------


@dataclass(frozen=True)
class Submission:
    """The URLs one unit of work handed over for delivery (one flush)."""

    #: Absolute and normalized, on the allowed hosts: what engines would receive
    #: (before the debounce store drops URLs they accepted recently).
    urls: tuple[str, ...]
    #: The URLs as the flush gave them (paths included).
    raw_urls: tuple[str, ...]
    #: Whether the debounce store was to be ignored (``indexnow_submit --force``).
    force: bool = False


class SubmissionOutbox:
    """Every :class:`Submission` captured by :func:`capture_submissions`, in order.

    Like ``django.core.mail.outbox``: inspect it after the code under test ran.
    """

    def __init__(self) -> None:
        self.submissions: list[Submission] = []
        self._lock = threading.Lock()

    @property
    def urls(self) -> list[str]:
        """Every URL submitted, each once, in the order first submitted."""
        with self._lock:
            return list(dict.fromkeys(url for s in self.submissions for url in s.urls))

    @property
    def paths(self) -> list[str]:
        """:attr:`urls` without scheme and host (``/blog/hello/``, query kept)."""
        result = []
        for url in self.urls:
            parts = urlsplit(url)
            result.append(parts.path + (f"?{parts.query}" if parts.query else ""))
        return list(dict.fromkeys(result))

    def clear(self) -> None:
        """Forget what was captured so far."""
        with self._lock:
            self.submissions.clear()

    def _record(self, submission: Submission) -> None:
        with self._lock:
            self.submissions.append(submission)

    def __len__(self) -> int:
        with self._lock:
            return len(self.submissions)

    def __iter__(self) -> Iterator[Submission]:
        with self._lock:
            return iter(list(self.submissions))

    def __getitem__(self, index: int) -> Submission:
        with self._lock:
            return self.submissions[index]

    def __repr__(self) -> str:
        return f"<SubmissionOutbox submissions={len(self)} urls={self.urls!r}>"


def _normalized(urls: Sequence[str]) -> tuple[str, ...]:
    """``urls`` as delivery would send them; as given when the settings are unusable."""
    from .conf import get_settings
    from .exceptions import IndexNowConfigError
    from .protocol.normalize import normalize_urls

    try:
        conf = get_settings()
    except IndexNowConfigError:
        return tuple(urls)
    return tuple(normalize_urls(urls, conf.base_url, conf.hosts).valid)


@contextlib.contextmanager
def capture_submissions(*, deliver: bool = False) -> Iterator[SubmissionOutbox]:
    """Record what the code in the block submits, instead of queuing or sending it.

    Every flush of a unit of work (a request through the middleware, a
    management command, ``batch()``, ``submit()``) that happens while the block
    runs is appended to the returned outbox::

        with capture_submissions() as outbox:
            client.post("/admin/blog/post/1/change/", data)
        assert outbox.urls == ["https://www.example.com/blog/hello/"]

    Nothing is enqueued or sent unless ``deliver=True``, which passes each
    flush on after recording it. URLs produced inside a transaction are
    flushed when it commits: in a Django ``TestCase``, keep the
    ``captureOnCommitCallbacks(execute=True)`` block inside this one.

    Which capture sees a flush: the innermost one of the thread (or asyncio
    task) that flushed; with ``deliver=True`` it passes the flush on to the
    capture around it, and the outermost to delivery. A thread with no capture
    of its own (a thread started inside the block, a live server) flushes into
    the capture entered most recently. So two threads capturing at once each
    see their own flushes only.
    """
    from .units.dispatch import intercept

    outbox = SubmissionOutbox()

    def record(urls: list[str], force: bool) -> bool:
        outbox._record(Submission(_normalized(urls), tuple(urls), force))
        return deliver

    with intercept(record):
        yield outbox
