"""Where a flush goes: one rq job, or a send after the response.

:func:`dispatch` is called once per unit of work (a request, a command, a job,
a ``batch()`` block) with the URLs it produced. It never raises and does no
network I/O on the request path except the one enqueue:

``queue``
    The URLs (normalized, plain strings) become exactly one job of
    :func:`indexnow_django.jobs.deliver` on ``QUEUE["NAME"]``, enqueued now
    (the collector flushes after the transaction has committed, so the job is
    not deferred again by django-rq's ``COMMIT_MODE``), or after
    ``QUEUE["DELAY"]`` seconds (rounded up to a whole second, rq's resolution)
    through rq's scheduler.

    A queue configured with ``"ASYNC": False`` (a development setting) runs
    the job at once, in the process that flushed; ``DELAY`` is ignored and a
    retryable answer is not retried (see :mod:`indexnow_django.jobs`).

``sync``
    Sent by this process after the response has gone out to the client (a
    closer on the response, run when the server closes it), or at once when
    there is no response (a command, a job, ``batch()`` in a script). No
    retries: what was not accepted is logged.

When Redis cannot take the job, the URLs are sent as in ``sync`` and the
fallback is logged: the request still succeeds and the URLs are not lost.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .conf import IndexNowSettings, get_settings, is_enabled
from .submitter import DeliveryReport, clean_urls, deliver_now

if TYPE_CHECKING:
    from django.http.response import HttpResponseBase
    from redis import Redis
    from rq.job import Job
    from rq.queue import Queue

logger = logging.getLogger(__name__)

__all__ = ["dispatch", "enqueue", "get_queue", "log_report", "new_batch_id"]

#: ``job.meta`` keys of a delivery job.
META_BATCH_ID = "indexnow_batch_id"
META_ATTEMPT = "indexnow_attempt"
#: Set on a job that failed (at that attempt): when it runs again it was requeued.
META_FAILED_AT = "indexnow_failed_at_attempt"


def new_batch_id() -> str:
    """A short random id that a flush, its jobs and their retries share in logs."""
    return uuid.uuid4().hex[:12]


def dispatch(
    urls: Sequence[str], *, response: HttpResponseBase | None = None, force: bool = False
) -> None:
    """Hand ``urls`` (absolute, or paths joined to ``BASE_URL``) to delivery. Never raises.

    ``response``: the response of the request being flushed; a synchronous
    send then runs after it has gone out. ``force``: ignore the debounce store.
    """
    try:
        if not urls or not is_enabled():
            return
        conf = get_settings()
        valid, _ = clean_urls(urls, conf)
        if not valid:
            return
        batch_id = new_batch_id()
        if conf.resolved_dispatch == "queue":
            _to_queue(valid, batch_id=batch_id, force=force, response=response, conf=conf)
        else:
            logger.info(
                "IndexNow flush batch=%s mode=sync count=%d when=%s",
                batch_id,
                len(valid),
                "after-response" if _can_defer(response) else "now",
            )
            _send_in_process(valid, batch_id=batch_id, force=force, response=response, conf=conf)
    except Exception:
        logger.exception("IndexNow could not dispatch count=%d", len(urls))


def _to_queue(
    urls: list[str],
    *,
    batch_id: str,
    force: bool,
    response: HttpResponseBase | None,
    conf: IndexNowSettings,
) -> None:
    try:
        queue = get_queue(conf)
        job = enqueue(
            queue, urls, batch_id=batch_id, force=force, delay=conf.queue_delay, conf=conf
        )
    except Exception as exc:  # Redis down, or anything else: never lose the URLs
        logger.warning(
            "IndexNow flush batch=%s mode=fallback count=%d when=%s: queue %r cannot take the "
            "job (%s: %s); sending from this process instead, without retries",
            batch_id,
            len(urls),
            "after-response" if _can_defer(response) else "now",
            conf.queue_name,
            type(exc).__name__,
            exc,
        )
        _send_in_process(urls, batch_id=batch_id, force=force, response=response, conf=conf)
        return
    logger.info(
        "IndexNow flush batch=%s mode=queue count=%d queue=%s job=%s%s",
        batch_id,
        len(urls),
        queue.name,
        job.id,
        "" if queue.is_async else " ran=inline",
    )


#: Seconds a flush waits for Redis before it falls back to sending in-process,
#: unless the queue's own connection settings say otherwise. Without them a
#: Redis host that drops packets would hold the request for ever.
REDIS_TIMEOUT = 2.0

_connections: dict[tuple[str, str], Redis] = {}


def _connection(name: str) -> Redis:
    """One Redis client per queue configuration and process (django-rq makes a new
    client, and so a new TCP connection, for every ``get_queue``)."""
    from django.conf import settings

    config = getattr(settings, "RQ_QUEUES", {})[name]
    key = (name, repr(sorted(config.items())))
    connection = _connections.get(key)
    if connection is None:
        import django_rq

        connection = django_rq.get_connection(name)
        if "USE_REDIS_CACHE" not in config:  # a cache's own client is not ours to change
            kwargs = connection.connection_pool.connection_kwargs
            for option in ("socket_connect_timeout", "socket_timeout"):
                if kwargs.get(option) is None:
                    kwargs[option] = REDIS_TIMEOUT
        _connections[key] = connection
    return connection


def get_queue(conf: IndexNowSettings) -> Queue:
    """The django-rq queue ``QUEUE["NAME"]``, enqueueing at once whatever ``COMMIT_MODE`` says."""
    import django_rq

    queue: Queue = django_rq.get_queue(
        conf.queue_name, commit_mode="auto", connection=_connection(conf.queue_name)
    )
    return queue


def enqueue(
    queue: Queue,
    urls: Sequence[str],
    *,
    batch_id: str,
    attempt: int = 1,
    engines: Sequence[str] | None = None,
    force: bool = False,
    delay: float = 0,
    conf: IndexNowSettings,
) -> Job:
    """Put one delivery job on ``queue``, now or in ``delay`` seconds. Raises on Redis errors.

    The job carries plain data only (strings, ints, a bool), so it unpickles
    in any worker, and ``job.meta`` holds the batch id and the attempt.
    """
    from .jobs import deliver

    kwargs: dict[str, Any] = {"batch_id": batch_id, "attempt": attempt, "force": bool(force)}
    if engines is not None:
        kwargs["engines"] = [str(engine) for engine in engines]
    plural = "" if len(urls) == 1 else "s"
    options: dict[str, Any] = {
        "args": ([str(url) for url in urls],),
        "kwargs": kwargs,
        "job_timeout": math.ceil(conf.queue_timeout),
        "description": f"IndexNow: {len(urls)} URL{plural}, batch {batch_id}, attempt {attempt}",
        "meta": {META_BATCH_ID: batch_id, META_ATTEMPT: attempt},
    }
    if delay > 0 and queue.is_async:
        # rq keeps the due time in whole seconds and truncates it: round up, so
        # that a job never runs before ``delay`` (an engine's Retry-After) is over.
        due = datetime.fromtimestamp(math.ceil(time.time() + delay), tz=timezone.utc)
        job: Job = queue.enqueue_at(due, deliver, **options)
    else:
        job = queue.enqueue(deliver, **options)
    return job


def _can_defer(response: HttpResponseBase | None) -> bool:
    return response is not None and isinstance(getattr(response, "_resource_closers", None), list)


def _send_in_process(
    urls: list[str],
    *,
    batch_id: str,
    force: bool,
    response: HttpResponseBase | None,
    conf: IndexNowSettings,
) -> None:
    """Send now, or after ``response`` has gone out when there is one."""

    def send() -> None:
        try:
            report = deliver_now(urls, force=force, batch_id=batch_id, conf=conf)
        except Exception:
            logger.exception("IndexNow send failed batch=%s count=%d", batch_id, len(urls))
            return
        log_report(report, batch_id=batch_id, conf=conf)

    if _can_defer(response):
        closers: list[Callable[[], None]] = response._resource_closers  # type: ignore[union-attr]
        closers.append(send)
    else:
        send()


def log_report(report: DeliveryReport, *, batch_id: str, conf: IndexNowSettings) -> None:
    """Log each POST that an in-process send could not get accepted (it is not retried)."""
    for result in report.results:
        if result.accepted:
            continue
        if result.retryable:
            advice = "not retried (sent from this process, without a queue)"
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


def rejection_hint(status: int | None, host: str, conf: IndexNowSettings) -> str:
    """What to do about a final rejection: check the setup, and for 403 the key file."""
    hint = "Run manage.py indexnow_check to check the settings and the key file"
    host_conf = conf.host_config(host)
    if status == 403 and host_conf is not None:
        hint += f" (the engine fetches the key from {host_conf.key_file_url})"
    return hint + "."
