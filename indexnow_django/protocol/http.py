"""The HTTP layer of the client: one POST, bounded in time and in memory. No Django import.

:meth:`HTTPSession.post` sends a body and returns the :class:`Answer` that came
back, whatever its status, or raises :class:`NoAnswer` when no complete
answer arrived (a network error, a timeout). What an answer *means* is the
client's business (:mod:`indexnow_django.protocol.client`); this module knows HTTP only.

A POST has one deadline for the whole exchange: when it passes, the POST's
sockets are shut down, so that whatever it waits for (connecting, the status
line, headers, a body trickled byte by byte) ends at once. requests and
urllib3 offer per-operation timeouts only, so the connections are urllib3's
with one hook (:class:`_Watched`) that hands their socket to the current
deadline. Only the first :data:`MAX_BODY_BYTES` of an answer are read.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests
import requests.adapters
import urllib3
import urllib3.connection

__all__ = ["MAX_BODY_BYTES", "Answer", "DeadlineExceeded", "HTTPSession", "NoAnswer"]

#: How much of an engine's answer is read at most; the rest is never downloaded.
MAX_BODY_BYTES = 16 * 1024


@dataclass(frozen=True)
class Answer:
    """A complete HTTP answer: status, reason phrase, headers and the start of the body."""

    status: int
    reason: str
    headers: Mapping[str, str]
    #: The first :data:`MAX_BODY_BYTES` of the body, decoded (undecodable bytes replaced).
    text: str


class DeadlineExceeded(requests.Timeout):
    """The answer did not arrive whole within the POST's deadline."""


class NoAnswer(Exception):
    """No complete answer: ``error`` is what went wrong, ``timed_out`` whether it was time."""

    def __init__(self, error: Exception, *, timed_out: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.timed_out = timed_out


class HTTPSession:
    """POSTs through a requests session whose connections a deadline can cut.

    A session given by the caller is used as it is (its own adapters, no deadline
    beyond requests' timeouts).
    """

    def __init__(self, session: requests.Session | None = None) -> None:
        if session is None:
            session = requests.Session()
            session.mount("http://", _DeadlineAdapter())
            session.mount("https://", _DeadlineAdapter())
        self.session = session

    def post(self, url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> Answer:
        """POST ``body`` to ``url``; the whole exchange ends within ``timeout`` seconds.

        No redirect is followed. Raises :class:`NoAnswer` when no complete
        answer arrived in time.
        """
        started = time.monotonic()
        deadline = _Deadline(timeout)
        try:
            with deadline:
                response = self.session.post(
                    url,
                    data=body,
                    headers=dict(headers),
                    timeout=timeout,
                    allow_redirects=False,
                    stream=True,
                )
                try:
                    text = _read_prefix(response, started + timeout)
                finally:
                    response.close()
            if deadline.expired:  # the answer was cut short, not complete
                raise DeadlineExceeded("the answer was not complete within the deadline")
        except (requests.Timeout, urllib3.exceptions.TimeoutError) as exc:
            raise NoAnswer(exc, timed_out=True) from exc
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            if deadline.expired:  # the deadline cut the connection: a timeout
                cut = DeadlineExceeded("no complete answer within the deadline")
                raise NoAnswer(cut, timed_out=True) from exc
            raise NoAnswer(exc, timed_out=False) from exc
        return Answer(response.status_code, response.reason or "", response.headers, text)


_watch = threading.local()


class _Deadline:
    """One POST's deadline: when it passes, the sockets of the POST are shut down, so
    that whatever the POST waits for (the status line, headers, the body) ends at once."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._done = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        _watch.current = self
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        _watch.current = None
        with self._lock:
            self._done = True
        self._timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Watched:
    """A connection whose socket joins the current POST's :class:`_Deadline` when the
    request has been sent and its answer is awaited."""

    sock: socket.socket | None

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        deadline: _Deadline | None = getattr(_watch, "current", None)
        if deadline is not None and self.sock is not None:
            deadline.watch(self.sock)
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]


class _HTTPConnection(_Watched, urllib3.connection.HTTPConnection):
    pass


class _HTTPSConnection(_Watched, urllib3.connection.HTTPSConnection):
    pass


class _HTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


class _DeadlineAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter with connections that :class:`_Deadline` can cut."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}


def _read_prefix(response: requests.Response, deadline: float) -> str:
    """The first :data:`MAX_BODY_BYTES` of ``response``'s body, as text, read by ``deadline``.

    The body is streamed, never read whole, and each read returns what has
    arrived: a body trickled byte by byte meets the deadline, not just the
    read timeout. Raises :class:`DeadlineExceeded` when the deadline passes first.
    """
    raw = response.raw
    # urllib3 2.3+ returns whatever arrived; older versions block until the
    # requested size, so they read a byte at a time (cheap: the body is short).
    read1 = getattr(raw, "read1", None)
    chunks: list[bytes] = []
    size = 0
    while size < MAX_BODY_BYTES:
        if time.monotonic() > deadline:
            raise DeadlineExceeded(
                f"the answer was not complete within the deadline ({size} bytes)"
            )
        if read1 is not None:
            chunk = read1(MAX_BODY_BYTES - size, decode_content=True)
        else:
            chunk = raw.read(1, decode_content=True)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    data = b"".join(chunks)[:MAX_BODY_BYTES]
    return data.decode(response.encoding or "utf-8", errors="replace")
