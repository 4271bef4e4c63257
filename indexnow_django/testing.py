"""Helpers for testing a site that uses indexnow_django.

:class:`LoopbackEngine` is a real HTTP server on 127.0.0.1 that stands in for
the IndexNow engines: point ``INDEXNOW["ENGINES"]`` at :attr:`LoopbackEngine.url`,
script its answers, and read back every request it received. It is the engine
this project's own test suite and demo use. No Django import.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["EngineRequest", "LoopbackEngine", "Reply"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    status: int = 200
    body: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Seconds to wait before answering (to simulate a hanging engine).
    delay: float = 0.0
    content_type: str = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class EngineRequest:
    """One request the engine received."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    received_at: float

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

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

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
        payload = reply.body.encode("utf-8")
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass  # the client gave up (timeout): nothing to answer

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

    def __init__(self, port: int = 0, default: Reply | None = None) -> None:
        self.default = default or Reply(200)
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
        self._thread = threading.Thread(target=self._server.serve_forever, name="loopback-engine", daemon=True)
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
            self.requests.append(request)
            reply = self._replies.popleft() if self._replies else self.default
            self._lock.notify_all()
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
