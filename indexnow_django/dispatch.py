"""Where a flush goes: one rq job, or a send after the response.

:func:`dispatch` is called once per unit of work (a request, a command, a job,
a ``batch()`` block) with the URLs it produced. It never raises and does no
network I/O on the request path except the one enqueue:

``queue``
    The URLs (normalized, plain strings) become exactly one job of
    :func:`indexnow_django.jobs.deliver` on ``QUEUE["NAME"]`` (see
    :mod:`indexnow_django.transports.rq.queue`), enqueued now (the collector flushes after
    the transaction has committed, so the job is not deferred again by
    django-rq's ``COMMIT_MODE``), or after ``QUEUE["DELAY"]`` seconds through
    rq's scheduler.

    A queue configured with ``"ASYNC": False`` (a development setting) runs
    the job at once, in the process that flushed; ``DELAY`` is ignored and a
    retryable answer is not retried (see :mod:`indexnow_django.jobs`).

``tasks``
    The URLs become exactly one task of ``indexnow_django.tasks.deliver`` on
    the ``django.tasks`` backend ``TASKS["BACKEND"]`` (see
    :mod:`indexnow_django.transports.tasks.enqueue`). A backend that runs a task as it is enqueued
    (the ImmediateBackend) does so after the response has gone out.

``sync``
    Sent by this process after the response has gone out to the client (a
    closer on the response, run when the server closes it), or at once when
    there is no response (a command, a job, ``batch()`` in a script). No
    retries: what was not accepted is logged.

When Redis (or the task backend) cannot take the job, the URLs are sent as in ``sync`` and the
fallback is logged: the request still succeeds and the URLs are not lost.
After an enqueue timed out, the flushes of the next :data:`~indexnow_django.delivery.breaker.WINDOW`
seconds skip the enqueue (:mod:`indexnow_django.delivery.breaker`), so a frozen Redis
costs one flush its timeout, not every one. The flush whose enqueue timed out
is kept in the database rather than sent from here: Redis may still take its
job when it answers again, and the job and the kept row are sent once between
them.
What that send does not get accepted for a reason that may pass (429, 5xx, a
timeout) is kept in the database until a worker can send it
(:mod:`indexnow_django.pending`).

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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from redis.exceptions import TimeoutError as RedisTimeoutError

from . import compat, signals
from .conf import IndexNowSettings, get_settings, is_enabled
from .delivery.breaker import guard
from .delivery.send import DeliveryReport, clean_urls, deliver_now, gone_urls
from .jobs import rejection_hint
from .pending import ENQUEUE_TIMED_OUT, keep
from .transports.rq.coalesce import add_to_window
from .transports.rq.queue import enqueue_delivery, get_queue, new_batch_id

if TYPE_CHECKING:
    from django.http.response import HttpResponseBase

logger = logging.getLogger(__name__)

__all__ = ["Interceptor", "dispatch", "intercept", "log_report", "rejection_hint"]

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
    ``response``: the response of the request being flushed; a synchronous
    send then runs after it has gone out. ``after_response``: the flush runs
    once the response has gone out (what the logs say). ``force``: ignore
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
        conf = get_settings()
        valid, _ = clean_urls(urls, conf)
        if not valid:
            return
        flush = _Flush(
            valid,
            gone_urls(valid, gone, conf),
            new_batch_id(),
            bool(force),
            conf,
            "after-response" if after_response or _can_defer(response) else "now",
        )
        mode = conf.resolved_dispatch
        if mode == "queue":
            _to_queue(flush, response)
        elif mode == "tasks":
            _to_tasks(flush, response)
        else:
            logger.info(
                "IndexNow flush batch=%s mode=sync count=%d when=%s",
                flush.batch_id,
                len(valid),
                flush.when,
            )
            _send_in_process(flush, response)
    except Exception:
        logger.exception("IndexNow could not dispatch count=%d", len(urls))


@dataclass(frozen=True)
class _Flush:
    """One flush on its way: normalized URLs (and which are gone), its batch id, options."""

    urls: list[str]
    gone: list[str]
    batch_id: str
    force: bool
    conf: IndexNowSettings
    #: When it is sent if sent from this process: "now", or "after-response".
    when: str


def _to_queue(flush: _Flush, response: HttpResponseBase | None) -> None:
    urls, batch_id, conf = flush.urls, flush.batch_id, flush.conf
    try:
        queue = get_queue(conf)
        with guard(queue.connection):
            if conf.queue_coalesce > 0 and not flush.force and queue.is_async:
                job_id = add_to_window(queue, urls, flush.gone, conf)
                logger.info(
                    "IndexNow flush batch=%s mode=coalesce count=%d queue=%s job=%s",
                    batch_id,
                    len(urls),
                    queue.name,
                    job_id,
                )
                return
            job = enqueue_delivery(
                queue,
                urls,
                gone=flush.gone,
                batch_id=batch_id,
                force=flush.force,
                delay=conf.queue_delay,
                conf=conf,
            )
    except RedisTimeoutError as exc:
        # Redis may still take the job when it answers again: sending the URLs from here
        # too would send them twice. Kept in the database instead, for a worker; whichever
        # of that and the job runs first sends them (see queue.first_run_of_batch).
        reason = f"{ENQUEUE_TIMED_OUT} ({type(exc).__name__}: {exc})"
        if keep(
            urls, gone=flush.gone, batch_id=batch_id, engines=None, force=flush.force, reason=reason
        ):
            logger.warning(
                "IndexNow flush batch=%s mode=kept count=%d when=%s: queue %r timed out (%s); "
                "the job may still reach Redis: kept in the database for a worker, sent once",
                batch_id,
                len(urls),
                flush.when,
                conf.queue_name,
                exc,
            )
            return
        _send_in_process(flush, response)
        return
    except Exception as exc:  # Redis down, or anything else: never lose the URLs
        logger.warning(
            "IndexNow flush batch=%s mode=fallback count=%d when=%s: queue %r cannot take the "
            "job (%s: %s); sending from this process instead, and keeping in the database "
            "what is not accepted",
            batch_id,
            len(urls),
            flush.when,
            conf.queue_name,
            type(exc).__name__,
            exc,
        )
        _send_in_process(flush, response, fallback=True)
        return
    logger.info(
        "IndexNow flush batch=%s mode=queue count=%d queue=%s job=%s%s",
        batch_id,
        len(urls),
        queue.name,
        job.id,
        "" if queue.is_async else " ran=inline",
    )


def _to_tasks(flush: _Flush, response: HttpResponseBase | None) -> None:
    from .transports.tasks import enqueue as taskqueue

    urls, batch_id, conf = flush.urls, flush.batch_id, flush.conf

    def enqueue(response: HttpResponseBase | None = None) -> None:
        try:
            task_id = taskqueue.enqueue_delivery(
                urls, gone=flush.gone, batch_id=batch_id, force=flush.force, conf=conf
            )
        except Exception as exc:  # the backend cannot take it: never lose the URLs
            logger.warning(
                "IndexNow flush batch=%s mode=fallback count=%d when=%s: task backend %r cannot "
                "take the task (%s: %s); sending from this process instead",
                batch_id,
                len(urls),
                flush.when,
                conf.tasks_backend,
                type(exc).__name__,
                exc,
            )
            _send_in_process(flush, response)  # after it, when there is one still to go out
            return
        logger.info(
            "IndexNow flush batch=%s mode=tasks count=%d backend=%s task=%s",
            batch_id,
            len(urls),
            conf.tasks_backend,
            task_id,
        )

    try:
        inline = taskqueue.runs_on_enqueue(taskqueue.backend(conf))
    except Exception:
        inline = False  # enqueue() says why
    if not (inline and response is not None and compat.run_after_response(response, enqueue)):
        enqueue(response)


def _can_defer(response: HttpResponseBase | None) -> bool:
    return response is not None and compat.can_run_after_response(response)


def _send_in_process(
    flush: _Flush, response: HttpResponseBase | None, *, fallback: bool = False
) -> None:
    """Send now, or after ``response`` has gone out when there is one.

    ``fallback``: the queue could not take the job; what may still be accepted
    later is kept in the database for a worker (see :mod:`indexnow_django.pending`).
    """

    urls, gone, batch_id, force, conf = (
        flush.urls,
        flush.gone,
        flush.batch_id,
        flush.force,
        flush.conf,
    )

    def send() -> None:
        try:
            report = deliver_now(urls, gone=gone, force=force, batch_id=batch_id, conf=conf)
        except Exception as exc:
            logger.exception("IndexNow send failed batch=%s count=%d", batch_id, len(urls))
            if fallback:
                reason = f"the send failed: {type(exc).__name__}: {exc}"
                keep(urls, gone=gone, batch_id=batch_id, engines=None, force=force, reason=reason)
            return
        log_report(report, batch_id=batch_id, conf=conf, kept=fallback)
        if fallback:
            _keep_retryable(report, batch_id=batch_id, force=force)

    if response is None or not compat.run_after_response(response, send):
        send()


def _keep_retryable(report: DeliveryReport, *, batch_id: str, force: bool) -> None:
    """Keep the URLs each engine may still accept later, one row per engine."""
    by_engine: dict[str, dict[str, None]] = {}
    reasons: dict[str, str] = {}
    for result in report.retryable:
        by_engine.setdefault(result.engine.endpoint, {}).update(dict.fromkeys(result.urls))
        status = result.status if result.status is not None else "-"
        reasons[result.engine.endpoint] = f"{result.engine.name} answered {status}"
    for endpoint, urls in by_engine.items():
        keep(
            list(urls),
            gone=[url for url in urls if url in report.gone],
            batch_id=batch_id,
            engines=[endpoint],
            force=force,
            reason=reasons[endpoint],
        )


def log_report(
    report: DeliveryReport, *, batch_id: str, conf: IndexNowSettings, kept: bool = False
) -> None:
    """Log each POST that an in-process send could not get accepted.

    ``kept``: what may be accepted later is kept for a worker, else it is not retried.
    """
    if not kept and report.retryable:
        signals.given_up(report.retryable, attempt=1, batch_id=batch_id)
    for result in report.results:
        if result.accepted:
            continue
        if result.retryable:
            advice = (
                "kept for a worker"
                if kept
                else "not retried (sent from this process, without a queue)"
            )
        else:
            advice = rejection_hint(result.status, result.host, conf)
        logger.warning(
            "IndexNow not accepted batch=%s engine=%s host=%s count=%d status=%s: %s. %s",
            batch_id,
            result.engine.name,
            result.host,
            len(result.urls),
            result.status if result.status is not None else "-",
            result.message,
            advice,
        )
