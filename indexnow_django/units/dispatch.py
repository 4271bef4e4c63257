"""Where a flush goes: the chosen transport, after the interceptors.

:func:`dispatch` is called once per unit of work (a request, a command, a job,
a ``batch()`` block) with the URLs it produced. It never raises and does no
network I/O on the request path except the one enqueue: it normalizes the URLs
(dropping foreign hosts), makes them one parcel
(:class:`~indexnow_django.sending.parcel.Parcel`) and hands it to the
transport ``DISPATCH`` chose (:mod:`indexnow_django.transports`): one rq job
(or a coalescing window's share of one), one ``django.tasks`` task, or a send
from this process after the response. When the transport cannot take it, the
URLs are sent from this process and nothing is lost. When this process's
settings are invalid (a server that never ran the system checks), the URLs are
kept in the database as given, for a process whose settings are valid
(:func:`~indexnow_django.sending.pending.keep_unsent`).

:func:`intercept` is the supported way to see flushes before they are routed
(and to stop them): :func:`indexnow_django.testing.capture_submissions` is
built on it. Interceptors are kept per context (a thread, an asyncio task and
what it runs through ``sync_to_async``) and nest:

* a flush goes to the innermost interceptor active in its own context; when
  that one passes it on, to the next one out, and from the outermost to the
  routing above;
* a flush from a context that has no interceptor of its own (a thread started
  inside the block, a live server's thread) goes to the interceptors of the
  one entered most recently in the process, in the same way.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING

from ..conf import get_settings, is_enabled
from ..exceptions import IndexNowConfigError
from ..sending.parcel import Parcel
from ..sending.pending import DRAIN_SLICE, PendingSubmission, keep_unsent, take_unsent
from ..sending.send import clean_urls, gone_urls
from ..transports import chosen

if TYPE_CHECKING:
    from django.http.response import HttpResponseBase

#: The flush lines, whichever transport carries them (see transports.base).
logger = logging.getLogger("indexnow_django.dispatch")

__all__ = ["Interceptor", "dispatch", "intercept"]

#: Called with a flush's URLs (as given) and its ``force`` flag; returns whether
#: the flush goes on (to the next interceptor out, or to delivery).
Interceptor = Callable[[list[str], bool], bool]


class _Layer:
    """One active :func:`intercept` block."""

    def __init__(self, handler: Interceptor, outer: tuple[_Layer, ...]) -> None:
        self.handler = handler
        self.active = True
        #: This layer and the ones it sits in, outermost first.
        self.chain: tuple[_Layer, ...] = (*outer, self)


_context_layers: contextvars.ContextVar[tuple[_Layer, ...]] = contextvars.ContextVar(
    "indexnow_dispatch_interceptors", default=()
)
_process_layers: list[_Layer] = []  # every active layer of every context, in entry order
_lock = threading.Lock()


@contextlib.contextmanager
def intercept(handler: Interceptor) -> Iterator[None]:
    """Give every flush of the block to ``handler`` first (see the module); nestable.

    ``handler`` runs in the flushing thread; it must not raise (what it
    raises is logged and the flush stops there).
    """
    layer = _Layer(handler, tuple(outer for outer in _context_layers.get() if outer.active))
    with _lock:
        _process_layers.append(layer)
    token = _context_layers.set(layer.chain)
    try:
        yield
    finally:
        layer.active = False
        with _lock:
            _process_layers.remove(layer)
        with contextlib.suppress(ValueError):  # left from another context than entered
            _context_layers.reset(token)


def _interceptors() -> tuple[_Layer, ...]:
    """The active layers a flush of this context goes through, innermost first."""
    chain = _context_layers.get()
    if not any(layer.active for layer in chain):
        with _lock:
            chain = _process_layers[-1].chain if _process_layers else ()
    return tuple(layer for layer in reversed(chain) if layer.active)


def dispatch(
    urls: Sequence[str],
    *,
    gone: Collection[str] = (),
    response: HttpResponseBase | None = None,
    force: bool = False,
    after_response: bool = False,
) -> None:
    """Hand ``urls`` (absolute, or paths joined to ``BASE_URL``) to delivery. Never raises.

    ``gone``: those of ``urls`` whose page is gone (unpublished, deleted).
    ``response``: the response of the request being flushed; a send from this
    process then runs after it has gone out. ``after_response``: the flush itself
    runs once the response has gone out (what the logs say). ``force``: ignore
    the debounce store.
    """
    try:
        if not urls:
            return
        for layer in _interceptors():
            if not layer.handler([str(url) for url in urls], bool(force)):
                return
        if not is_enabled():
            return
        try:
            conf = get_settings()
            valid, _ = clean_urls(urls, conf)
        except IndexNowConfigError as exc:
            # A server that never ran the system checks: the URLs wait in the database
            # for a process whose settings are valid, instead of being dropped.
            keep_unsent(urls, gone=gone, force=bool(force), problem=str(exc))
            return
        if not valid:
            return
        parcel = Parcel.of(valid, gone=gone_urls(valid, gone, conf), force=bool(force))
        transport = chosen(conf)
        transport.take_flush(parcel, response, after_response=after_response)
        if not transport.workers_send_kept:
            _look_for_kept()
    except Exception:
        logger.exception("IndexNow could not dispatch count=%d", len(urls))


#: Whether this process has looked for the URLs that invalid settings kept in the
#: database: ``None`` not yet, ``False`` looking now, ``True`` done.
_kept_looked_for: bool | None = None
_kept_lock = threading.Lock()


def _look_for_kept() -> None:
    """Once a process whose settings are valid, in a thread of its own (off the request
    path): flush again the URLs that invalid settings kept in the database. A transport
    whose workers send them (:attr:`~indexnow_django.transports.base.Transport.workers_send_kept`)
    leaves them to its workers."""
    global _kept_looked_for
    with _kept_lock:
        if _kept_looked_for is not None:
            return
        _kept_looked_for = False
    threading.Thread(target=_send_kept, name="indexnow-kept", daemon=True).start()


def _send_kept() -> None:
    global _kept_looked_for
    from django.db import connections

    try:
        while True:
            rows = take_unsent()
            _kept_looked_for = True
            _flush_kept(rows)
            if len(rows) < DRAIN_SLICE:
                break
    except Exception as exc:  # no table yet, no database here: the next flush looks again
        logger.debug("IndexNow could not look for URLs kept in the database: %s", exc)
        if not _kept_looked_for:
            _kept_looked_for = None
    finally:
        connections.close_all()  # this thread's


def _flush_kept(rows: list[PendingSubmission]) -> None:
    """Flush the URLs of kept ``rows`` again, merged as a worker merges them: one flush (one
    POST per host and engine) for them all, two when some ignore the debounce store."""
    merged: dict[bool, tuple[dict[str, None], set[str]]] = {}
    for row in rows:
        logger.info(
            "IndexNow kept batch=%s count=%d flushed again (kept %s: %s)",
            row.batch_id,
            len(row.url_list),
            row.kept_at.isoformat(),
            row.reason,
        )
        urls, gone = merged.setdefault(row.force, ({}, set()))
        urls.update(dict.fromkeys(row.url_list))
        gone.update(row.gone_list)
    for force, (urls, gone) in merged.items():
        # As a flush with no unit: through the interceptors, normalized with these settings
        # (kept again, as one row, if they are invalid once more).
        dispatch(list(urls), gone=gone, force=force)
