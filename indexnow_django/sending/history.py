"""The history of POSTs: one ``Delivery`` row per POST, and its retention.

:func:`record` is called by the submitter right after each POST, whoever
posts (a worker's job, a synchronous send, the fallback after a Redis
failure, ``indexnow_submit --sync``). It costs one INSERT per POST, never one
per URL: the URLs of the POST are stored newline-joined in one text column.
It never raises: a failure to record is logged and the delivery goes on.

Retention needs no command: after an INSERT, a process deletes the records
older than ``HISTORY["RETENTION_DAYS"]`` if it has not done so within
:data:`PURGE_INTERVAL` seconds (one indexed range DELETE). A forking rq worker
runs each job in a new work horse, so there it happens at most once per job.

Each record carries the time its URLs were flushed (``flushed_at``), read from the
batch id (:func:`flushed_at`), which every job and retry of a flush shares: the
freshness report (:mod:`indexnow_django.ops.report`) measures from it.

This module also answers the question the admin asks about an object: when
were its URLs last accepted, and by which engines (:func:`last_accepted`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable, Sequence
from datetime import date, datetime, timedelta
from datetime import timezone as dt_timezone
from typing import TYPE_CHECKING

from django.db import router, transaction
from django.db.models import Max, Q, Sum, TextField, Value
from django.db.models.functions import Concat, TruncDate
from django.utils import timezone

from ..conf import IndexNowSettings
from ..protocol.client import Outcome, PostResult
from .parcel import current_runner

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from ..models import Delivery

logger = logging.getLogger(__name__)

__all__ = [
    "PURGE_INTERVAL",
    "accepted_by_all",
    "attempt_of",
    "flushed_at",
    "has_url",
    "has_url_index",
    "last_accepted",
    "narrowed",
    "padded_urls",
    "purge",
    "record",
    "record_skipped",
    "urls_per_day",
    "with_urls",
]

#: Seconds between two retention passes of one process.
PURGE_INTERVAL = 3600.0
#: Characters of the engine's answer that a record keeps.
ANSWER_CHARS = 500

_last_purge: float | None = None


def record(
    result: PostResult, *, batch_id: str, conf: IndexNowSettings, attempt: int | None = None
) -> None:
    """Store one POST and what came of it. Never raises.

    ``attempt``: the number :func:`attempt_of` gave for it (asked here when not given).
    """
    if not conf.history_enabled:
        return
    try:
        row = _insert(result, batch_id, conf, attempt)
    except Exception:
        logger.warning(
            "IndexNow history not recorded batch=%s engine=%s host=%s count=%d",
            batch_id,
            result.engine.name,
            result.host,
            len(result.urls),
            exc_info=True,
        )
        return
    if conf.crawl_enabled and row.outcome == Outcome.ACCEPTED.value:
        from ..crawl.waits import wait_for_crawlers

        wait_for_crawlers(row)
    global _last_purge
    now = time.monotonic()
    if _last_purge is not None and now - _last_purge < PURGE_INTERVAL:
        return
    _last_purge = now
    try:
        purge(conf.history_retention_days)
    except Exception:
        logger.warning("IndexNow history retention failed", exc_info=True)


def _insert(
    result: PostResult, batch_id: str, conf: IndexNowSettings, attempt: int | None
) -> Delivery:
    from ..models import Delivery

    dry_run = Delivery.Outcome.DRY_RUN
    outcome = dry_run if conf.dry_run else Delivery.Outcome(result.outcome.value)
    runner = current_runner()
    if attempt is None:
        attempt = _attempt_in_process(batch_id, result)
    using = router.db_for_write(Delivery)
    with transaction.atomic(using=using):  # a savepoint inside a caller's transaction
        created: Delivery = Delivery.objects.using(using).create(
            sent_at=timezone.now() - timedelta(seconds=result.elapsed),
            batch_id=batch_id[:64],
            attempt=attempt,
            engine=result.engine.name[:255],
            host=result.host[:255],
            url_count=len(result.urls),
            outcome=outcome,
            status=result.status,
            answer=result.message[:ANSWER_CHARS],
            duration=round(result.elapsed, 4),
            job_id=runner.id if runner is not None else "",
            queue=runner.queue if runner is not None else "",
            urls=Delivery.URL_SEPARATOR.join(result.urls),
            flushed_at=flushed_at(batch_id),
        )
    return created


def record_skipped(
    host: str, skipped: Sequence[tuple[str, str]], *, batch_id: str, conf: IndexNowSettings
) -> None:
    """Store the URLs of ``host`` that the preflight held back (``(url, reason)`` pairs):
    one record per reason, outcome ``skipped``, the reason as the answer. Never raises."""
    if not conf.history_enabled or not skipped:
        return
    from ..models import Delivery

    by_reason: dict[str, list[str]] = {}
    for url, reason in skipped:
        by_reason.setdefault(reason, []).append(url)
    now, flushed = timezone.now(), flushed_at(batch_id)
    runner = current_runner()
    job_id, queue = (runner.id, runner.queue) if runner is not None else ("", "")
    attempt = 1  # the preflight screens a flush's first attempt only
    rows = [
        Delivery(
            sent_at=now,
            batch_id=batch_id[:64],
            attempt=attempt,
            engine=SKIPPED_ENGINE,
            host=host[:255],
            url_count=len(urls),
            outcome="skipped",
            answer=reason[:ANSWER_CHARS],
            job_id=job_id,
            queue=queue,
            urls=Delivery.URL_SEPARATOR.join(urls),
            flushed_at=flushed,
        )
        for reason, urls in by_reason.items()
    ]
    try:
        using = router.db_for_write(Delivery)
        with transaction.atomic(using=using):
            Delivery.objects.using(using).bulk_create(rows)
    except Exception:
        logger.warning(
            "IndexNow history not recorded batch=%s host=%s skipped=%d",
            batch_id,
            host,
            len(skipped),
            exc_info=True,
        )


#: The ``engine`` of the records of skipped URLs: no engine was asked.
SKIPPED_ENGINE = "preflight"
#: Flush times read from batch ids are believed between these (Unix seconds).
_EARLIEST_FLUSH = 1_577_836_800  # 2020-01-01


def flushed_at(batch_id: str) -> datetime | None:
    """When the flush of ``batch_id`` happened, from the id itself (see
    :func:`indexnow_django.sending.parcel.new_batch_id`); ``None`` for an id that does not say."""
    if len(batch_id) != 16:
        return None
    try:
        centis = int(batch_id[:10], 16)
        int(batch_id[10:], 16)
    except ValueError:
        return None
    seconds = centis / 100
    if not _EARLIEST_FLUSH <= seconds <= time.time() + 86400:
        return None
    return datetime.fromtimestamp(seconds, tz=dt_timezone.utc)


def attempt_of(batch_id: str, result: PostResult) -> int:
    """The number of the attempt ``result`` answered, in a process that retries by itself:
    one more than its last retryable answer for the same batch, engine and host. Ask once
    per POST: the count moves on. (A job or task knows its attempt from its parcel.)"""
    return _attempt_in_process(batch_id, result)


#: Retryable answers seen by this process, per ``(batch id, engine, host)``: a
#: caller that retries in-process (``indexnow_submit --sync``) sends again under
#: the same batch id, and its next record is the next attempt.
_retries: dict[tuple[str, str, str], int] = {}
_MAX_TRACKED = 1000


def _attempt_in_process(batch_id: str, result: PostResult) -> int:
    key = (batch_id, result.engine.name, result.host)
    attempt = _retries.pop(key, 0) + 1
    if result.outcome is Outcome.RETRY:
        if len(_retries) >= _MAX_TRACKED:
            _retries.pop(next(iter(_retries)))
        _retries[key] = attempt
    return attempt


def purge(retention_days: int) -> int:
    """Delete the records older than ``retention_days``, and the crawl receipts of their
    acceptances; return how many records went."""
    from ..crawl.waits import purge as purge_crawls
    from ..models import Delivery

    cutoff = timezone.now() - timedelta(days=retention_days)
    purge_crawls(cutoff)  # the crawl receipts (and waits) of the records that go
    deleted: int = Delivery.objects.filter(sent_at__lt=cutoff).delete()[0]
    if deleted:
        logger.info("IndexNow history retention deleted=%d before=%s", deleted, cutoff.isoformat())
    return deleted


def has_url(url: str) -> Q:
    """A condition on :class:`Delivery` rows: their URLs include exactly ``url`` (a whole line).

    Applies to a queryset annotated with :func:`padded_urls` as ``padded``. The
    plain substring test comes first: it is the cheap one (a whole line with
    newlines in the pattern is slow to look for), and rows that pass it are few.
    """
    return Q(urls__contains=url) & Q(padded__contains=f"\n{url}\n")


def padded_urls() -> Concat:
    """The URL text between newlines, so that every URL is a ``\\n<url>\\n`` in it."""
    return Concat(Value("\n"), "urls", Value("\n"), output_field=TextField())


#: The bits of each URL's hash that PostgreSQL's index of the history keeps
#: (migration ``0003_delivery_url_index``).
URL_HASH_MASK = 1048575

_url_index: dict[str, bool] = {}


def has_url_index(using: str) -> bool:
    """Whether the database ``using`` has the index of the history's URLs (PostgreSQL)."""
    from django.db import connections

    if using not in _url_index:
        connection = connections[using]
        found = False
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1 FROM pg_proc WHERE proname = 'indexnow_url_hashes'")
                found = cursor.fetchone() is not None
        _url_index[using] = found
    return _url_index[using]


def narrowed(queryset: QuerySet[Delivery], urls: Sequence[str]) -> QuerySet[Delivery]:
    """``queryset`` limited, through the index when the database has one, to the records
    that may carry one of ``urls`` (whole URLs): a superset, for a condition to check."""
    if not urls or not has_url_index(queryset.db):
        return queryset
    table = queryset.model._meta.db_table
    hashes = ", ".join([f"hashtext(%s) & {URL_HASH_MASK}"] * len(urls))
    where = f'indexnow_url_hashes("{table}"."urls") && ARRAY[{hashes}]::integer[]'
    return queryset.extra(where=[where], params=list(urls))


def with_urls(queryset: QuerySet[Delivery], urls: Iterable[str]) -> QuerySet[Delivery]:
    """The records of ``queryset`` whose URLs include any of ``urls`` exactly (whole lines).

    On PostgreSQL the index of the history's URLs finds the few records to check, in
    milliseconds however long the history; elsewhere every URL text is read.
    """
    wanted = [url for url in urls if url]
    condition = Q()
    for url in wanted:
        condition |= has_url(url)
    if not wanted:
        nothing: QuerySet[Delivery] = queryset.none()
        return nothing
    found: QuerySet[Delivery] = (
        narrowed(queryset, wanted).annotate(padded=padded_urls()).filter(condition)
    )
    return found


def last_accepted(urls: Iterable[str]) -> dict[str, datetime]:
    """``{engine: when}``: when each engine last accepted any of ``urls``, newest first."""
    from ..models import Delivery

    rows = (
        with_urls(Delivery.objects.filter(outcome=Delivery.Outcome.ACCEPTED), urls)
        .values("engine")
        .annotate(last=Max("sent_at"))
    )
    found = {row["engine"]: row["last"] for row in rows}
    return dict(sorted(found.items(), key=lambda item: item[1], reverse=True))


def accepted_by_all(engines: Collection[str]) -> dict[str, datetime]:
    """``{url: when}`` for every URL that each of ``engines`` (names) accepted within the
    history: the oldest of their last acceptances, i.e. when the last of them had it.

    One pass over the accepted records, streamed; it holds every URL they name.
    """
    from ..models import Delivery

    wanted = set(engines)
    last: dict[str, dict[str, datetime]] = {}
    rows = (
        Delivery.objects.filter(outcome=Delivery.Outcome.ACCEPTED, engine__in=wanted)
        .order_by()
        .values_list("engine", "sent_at", "urls")
    )
    for engine, sent_at, urls in rows.iterator(chunk_size=500):
        for url in urls.split(Delivery.URL_SEPARATOR):
            seen = last.setdefault(url, {})
            if seen.get(engine) is None or seen[engine] < sent_at:
                seen[engine] = sent_at
    return {url: min(seen.values()) for url, seen in last.items() if len(seen) == len(wanted)}


def urls_per_day(queryset: QuerySet[Delivery], days: int) -> list[tuple[date, dict[str, int]]]:
    """URLs per local day and outcome over the last ``days`` days and today, oldest first.

    One aggregate query; every day of the window is present, with zeros.
    """
    tz = timezone.get_current_timezone()
    today = timezone.localdate()
    first = today - timedelta(days=days)
    start = timezone.make_aware(datetime.combine(first, datetime.min.time()), tz)
    rows = (
        queryset.order_by()
        .filter(sent_at__gte=start)
        .annotate(day=TruncDate("sent_at", tzinfo=tz))
        .values("day", "outcome")
        .annotate(count=Sum("url_count"))
    )
    totals: dict[date, dict[str, int]] = {first + timedelta(days=n): {} for n in range(days + 1)}
    for row in rows:
        if row["day"] in totals:
            totals[row["day"]][row["outcome"]] = int(row["count"] or 0)
    return list(totals.items())
