"""The outbox of rq's transport: URLs waiting to go out, merged by window, host and engine.

Time is cut into windows of ``QUEUE["COALESCE"]`` seconds (window ``w`` is
``[w * COALESCE, (w + 1) * COALESCE)``, the same for every process). A flush in
window ``w`` makes one Redis round trip (:func:`add_to_window`, one Lua script on keys
of ours), and the first flush of the window a second one:

* its URLs go into the queue's outbox, a Redis hash (``indexnow:pending:<queue>``,
  URL → ``p`` public or ``g`` gone, the time it was added and the time it is due:
  a URL in it twice is one entry, its last side wins);
* the window's mark (``indexnow:window:<queue>:<w>``) says whether its job is
  scheduled; the flush that sets it schedules, through rq
  (``Queue.schedule_job``, unique), the window's job,
  :func:`indexnow_django.transports.rq.jobs.deliver_window`, at the end of the
  window (plus ``QUEUE["DELAY"]``) under the id ``indexnow-window-<queue>-<w>``.
  Every other flush of the window finds the mark: one job per window, about 1 KB
  of Redis however many flushes it gathers.

What waits for one engine only goes to that engine's outbox
(``indexnow:pending:<queue>:engine:<endpoint>``, listed in
``indexnow:outboxes:<queue>``), due at the window of its moment: the POSTs the
throttle holds back (at their slot), what a job near its timeout had no time to
send, and the rows web processes kept during a Redis outage. So URLs that wait for
the same host and engine, for whatever reason, go out together, up to
``BATCH["MAX_URLS"]`` per POST.

When the window's job runs, :func:`take_outbox` reads every outbox and, in one
transaction, puts what is due in each (every URL of a host one of whose URLs is
due) in one ordinary delivery job (at the front of the queue)
and removes from it exactly what it read (an entry added again meanwhile stays).
Those delivery jobs are like any other: debounce, one POST per host batch and
engine, retries per engine through rq's scheduler, a heartbeat, and a worker's
sweep that sends a job again when its worker died mid-POST. Until the transaction
the URLs are in the outbox, so a worker killed before it loses nothing either:
the next window's job, or the sweep (:func:`ensure_window_job`, every few seconds
in an idle worker), takes them.

The window's job marks its window as started before it reads the outboxes
(:func:`window_started`): a flush that lands in it later (a clock a little
behind the worker's) schedules the next window's job instead, and rq refuses
to schedule a job under the id of one that exists: a job is never written
again under its own id while it runs.
"""

from __future__ import annotations

import logging
import math
import re
import time
import zlib
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from ...conf import IndexNowSettings
from .queue import WINDOW_FUNC

if TYPE_CHECKING:
    from rq.job import Job
    from rq.queue import Queue

logger = logging.getLogger(__name__)

__all__ = [
    "WINDOW_FUNC",
    "add_to_window",
    "backlog",
    "ensure_window_job",
    "outbox_count",
    "outbox_key",
    "take_outbox",
    "window_job_id",
    "window_started",
]


PUBLIC, GONE = "p", "g"

#: URL/side pairs given to one HSET of the scripts (Lua's stack holds ~8,000 values).
_CHUNK = 2000

# KEYS[1] outbox hash, KEYS[2] the queue's set of engine outboxes, KEYS[3] and KEYS[4] the
# marks of the window and of the next one; ARGV[1] n, ARGV[2] chunk, ARGV[3..2n+2] url/value
# pairs, then the engine endpoint (empty: every engine) and the marks' ttl. Returns
# {offset, claimed}: claimed 1 when this flush must schedule the job of window + offset.
_ADD = """
local n = tonumber(ARGV[1])
local chunk = tonumber(ARGV[2])
local i = 3
while i < 3 + 2 * n do
    local last = math.min(i + 2 * chunk - 1, 2 + 2 * n)
    redis.call('HSET', KEYS[1], unpack(ARGV, i, last))
    i = last + 1
end
local base = 3 + 2 * n
if n > 0 and ARGV[base] ~= '' then
    redis.call('SADD', KEYS[2], ARGV[base])
end
local ttl = tonumber(ARGV[base + 1])
for k = 3, 4 do
    if redis.call('SET', KEYS[k], 'scheduled', 'NX', 'EX', ttl) then
        return {k - 3, 1}
    end
    if redis.call('GET', KEYS[k]) ~= 'started' then
        return {k - 3, 0}
    end
end
return {1, 0}
"""

# KEYS[1] outbox hash; ARGV url/value pairs read: remove each that still has that value.
_TAKE = """
local removed = 0
for i = 1, #ARGV, 2 do
    if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then
        redis.call('HDEL', KEYS[1], ARGV[i])
        removed = removed + 1
    end
end
return removed
"""

_scripts: dict[tuple[int, str], Any] = {}


def _script(connection: Any, source: str) -> Any:
    key = (id(connection), source)
    script = _scripts.get(key)
    if script is None:
        script = _scripts[key] = connection.register_script(source)
    return script


def outbox_key(queue_name: str, engine: str | None = None) -> str:
    """The Redis hash of the URLs waiting for the next window's job of ``queue_name``: for
    every engine, or for the engine whose endpoint is ``engine`` only."""
    if engine is None:
        return f"indexnow:pending:{queue_name}"
    return f"indexnow:pending:{queue_name}:engine:{engine}"


def _outboxes_key(queue_name: str) -> str:
    """The Redis set of the endpoints that have an outbox of their own on ``queue_name``."""
    return f"indexnow:outboxes:{queue_name}"


def _value(side: str, now: float, due: float) -> str:
    """An outbox entry's value: the side, when it was added and when it is due (whole
    seconds)."""
    return f"{side}:{int(now)}:{math.ceil(due)}"


def _entry(value: Any) -> tuple[str, float | None, float]:
    """An outbox entry's side, when it was added (``None``: not said) and when it is due."""
    text = value.decode() if isinstance(value, bytes) else str(value)
    side, *times = text.split(":")
    added = float(times[0]) if times and times[0].isdigit() else None
    due = float(times[1]) if len(times) > 1 and times[1].isdigit() else 0.0
    return side, added, due


def _job_id_part(name: str) -> str:
    """``name`` as rq job ids allow (``[A-Za-z0-9_-]``), still telling names apart."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    if safe != name:
        safe += f"_{zlib.crc32(name.encode()):08x}"
    return safe


def window_job_id(queue_name: str, window: int) -> str:
    return f"indexnow-window-{_job_id_part(queue_name)}-{window}"


def window_of(timestamp: float, conf: IndexNowSettings) -> int:
    return math.floor(timestamp / conf.queue_coalesce)


def _window_mark_key(queue_name: str, window: int) -> str:
    """The mark of ``window``'s job: ``scheduled`` once a flush took it on itself to schedule
    the job, ``started`` once the job runs (a flush then schedules the next window's)."""
    return f"indexnow:window:{queue_name}:{window}"


def _window_job(queue: Queue, window: int, conf: IndexNowSettings) -> tuple[Job, float]:
    """The (unsaved) job of ``window`` and its due time."""
    from .queue import job_options

    due = math.ceil((window + 1) * conf.queue_coalesce + conf.queue_delay)
    job: Job = queue.create_job(
        WINDOW_FUNC,
        args=(window,),
        job_id=window_job_id(queue.name, window),
        description=f"IndexNow: the URLs flushed in window {window} "
        f"(QUEUE['COALESCE'] {conf.queue_coalesce:g} s)",
        result_ttl=conf.queue_result_ttl,
        **job_options(conf),
    )
    return job, due


def _schedule_window(queue: Queue, window: int, conf: IndexNowSettings) -> Job | None:
    """Put ``window``'s job in rq's scheduled job registry, through rq, unless a job of its
    id exists (scheduled, or running). Returns it, or ``None``."""
    from rq.exceptions import DuplicateJobError

    from .queue import due_at

    job, due = _window_job(queue, window, conf)
    try:
        scheduled: Job = queue.schedule_job(job, due_at(due), unique=True)
    except DuplicateJobError:
        return None
    return scheduled


def _mark_ttl(window: int, now: float, conf: IndexNowSettings) -> int:
    """Seconds a window's mark is kept: until well after the next window's job is due."""
    return max(0, math.ceil((window + 2) * conf.queue_coalesce + conf.queue_delay - now)) + 3600


def add_to_window(
    queue: Queue,
    urls: Sequence[str],
    gone: Collection[str],
    conf: IndexNowSettings,
    *,
    now: float | None = None,
    engine: str | None = None,
    due: float | None = None,
) -> str:
    """Add URLs to the outbox (``engine``'s, or every engine's) and make sure the window's
    job is scheduled: the current window's, or the one of ``due`` (a Unix time: the job
    runs no earlier).

    One Redis round trip, which also tells whether the window's job is scheduled
    already (its mark, a key of ours); the first flush of a window makes a
    second one, rq's own scheduling of the job. Returns the id of the job that
    will send them. Raises when the first round trip fails.
    """
    now = time.time() if now is None else now
    due = max(now, due or 0)
    window = window_of(due, conf)
    gone_set = set(gone)
    public, gone_value = _value(PUBLIC, now, due), _value(GONE, now, due)
    pairs: list[str] = []
    for url in urls:
        pairs += [url, gone_value if url in gone_set else public]
    keys = [
        outbox_key(queue.name, engine),
        _outboxes_key(queue.name),
        _window_mark_key(queue.name, window),
        _window_mark_key(queue.name, window + 1),
    ]
    args = [len(urls), _CHUNK, *pairs, engine or "", _mark_ttl(window, now, conf)]
    offset, claimed = _script(queue.connection, _ADD)(keys=keys, args=args)
    window += int(offset)
    if int(claimed):
        try:
            _schedule_window(queue, window, conf)
        except Exception as exc:
            # The URLs are in the outbox already: sending them from here too would send them
            # twice. A worker's sweep (ensure_window_job) schedules the job.
            logger.warning(
                "IndexNow window job of queue=%s window=%s not scheduled (%s: %s); the URLs "
                "wait in the outbox for a worker's sweep",
                queue.name,
                window,
                type(exc).__name__,
                exc,
            )
    return window_job_id(queue.name, window)


def window_started(queue: Queue, window: int, conf: IndexNowSettings) -> None:
    """Mark ``window``'s job as running: the flushes that still land in it schedule the next
    window's job (a job is never written again under its own id while it runs)."""
    key = _window_mark_key(queue.name, window)
    queue.connection.set(key, "started", ex=_mark_ttl(window, time.time(), conf))


def _outboxes(queue: Queue) -> list[str | None]:
    """Every engine with an outbox of its own on ``queue``, and ``None`` for every engine's."""
    members = queue.connection.smembers(_outboxes_key(queue.name))
    engines = sorted(m.decode() if isinstance(m, bytes) else str(m) for m in members)
    return [None, *engines]


def take_outbox(queue: Queue, conf: IndexNowSettings) -> tuple[list[Job], int]:
    """Put each outbox of ``queue`` in one delivery job; return the jobs and the URL count.

    The jobs go to the front of the queue and the URLs they hold leave the
    outboxes in the same transaction: whatever happens to this process, each
    URL of an outbox is either still there or in a job.
    """
    from ...sending.parcel import Parcel, new_batch_id
    from .queue import parcel_job

    connection = queue.connection
    take = _script(connection, _TAKE)
    jobs: list[Job] = []
    count = 0
    with connection.pipeline() as pipe:
        for engine in _outboxes(queue):
            key = outbox_key(queue.name, engine)
            entries = connection.hgetall(key)
            if not entries:
                if engine is not None:
                    pipe.srem(_outboxes_key(queue.name), engine)
                continue
            urls: list[str] = []
            gone: list[str] = []
            pairs: list[Any] = []
            oldest = time.time()
            for raw_url, value in _due_hosts(entries, time.time()):
                url = raw_url.decode() if isinstance(raw_url, bytes) else str(raw_url)
                urls.append(url)
                side, added, _ = _entry(value)
                if side == GONE:
                    gone.append(url)
                if added is not None:
                    oldest = min(oldest, added)
                pairs += [raw_url, value]
            if not urls:
                continue  # due later: the window job of its moment takes it
            # The batch id says when the oldest of them was flushed (the history's flushed_at).
            batch_id = new_batch_id(at=oldest)
            if engine is None:
                parcel = Parcel.of(urls, batch_id=batch_id, gone=gone)
            else:
                # What waits for one engine was held back at a slot of the throttle taken
                # then (or never tried): it is due now, within the engine's budget for the
                # last minute, without taking another slot behind those it took.
                parcel = Parcel.of(
                    urls, batch_id=batch_id, gone=gone, engines=(engine,), slot=time.time()
                )
            job = parcel_job(queue, parcel, conf=conf)
            queue.enqueue_job(job, pipeline=pipe, at_front=True)
            for start in range(0, len(pairs), 2 * _CHUNK):
                take(keys=[key], args=pairs[start : start + 2 * _CHUNK], client=pipe)
            jobs.append(job)
            count += len(urls)
        pipe.execute()
    return jobs, count


def _due_hosts(entries: dict[Any, Any], now: float) -> list[tuple[Any, Any]]:
    """The entries of the hosts that have one due: a host's URLs go out together, so what
    was added for it later (held back behind a later slot, say) joins what is due."""
    from ...protocol.normalize import host_of

    by_host: dict[str, list[tuple[Any, Any]]] = {}
    due: dict[str, float] = {}
    for raw_url, value in entries.items():
        host = host_of(raw_url.decode() if isinstance(raw_url, bytes) else str(raw_url))
        by_host.setdefault(host, []).append((raw_url, value))
        due[host] = min(due.get(host, math.inf), _entry(value)[2])
    return [entry for host, found in by_host.items() if due[host] <= now + 1 for entry in found]


def outbox_count(queue: Queue) -> int:
    """URLs waiting in the outboxes of ``queue`` (one waiting for two engines counts twice)."""
    pipe = queue.connection.pipeline(transaction=False)
    for engine in _outboxes(queue):
        pipe.hlen(outbox_key(queue.name, engine))
    return sum(int(n) for n in pipe.execute())


def backlog(queue: Queue, conf: IndexNowSettings) -> list[tuple[str, str, int, float | None]]:
    """What waits in the outboxes, per host and engine: ``(host, engine name, URL count,
    seconds the oldest has waited)``, longest wait first. Reads every entry: for
    ``indexnow_check``, not for the request path."""
    from ...protocol.normalize import host_of

    now = time.time()
    names = {engine.endpoint: engine.name for engine in conf.engines}
    found: dict[tuple[str, str], list[Any]] = {}
    for engine in _outboxes(queue):
        wanted = list(names) if engine is None else [engine]
        for raw_url, value in queue.connection.hscan_iter(outbox_key(queue.name, engine)):
            url = raw_url.decode() if isinstance(raw_url, bytes) else str(raw_url)
            added = _entry(value)[1]
            for endpoint in wanted:
                row = found.setdefault((host_of(url), names.get(endpoint, endpoint)), [0, None])
                row[0] += 1
                if added is not None and (row[1] is None or added < row[1]):
                    row[1] = added
    rows = [
        (host, engine, count, None if oldest is None else max(0.0, now - oldest))
        for (host, engine), (count, oldest) in found.items()
    ]
    return sorted(rows, key=lambda row: (-(row[3] or 0), row[0], row[1]))


def ensure_window_job(queue: Queue, conf: IndexNowSettings) -> str | None:
    """Schedule the current window's job when URLs wait in an outbox and no window job waits.

    The outboxes' URLs are sent whatever became of the flush that added them
    (its second round trip failed, a window job died before taking them).
    Returns the id of the job scheduled, if any.
    """
    if not outbox_count(queue):
        return None
    prefix = f"indexnow-window-{_job_id_part(queue.name)}-"
    waiting = [
        job_id
        for job_id in (
            *queue.scheduled_job_registry.get_job_ids(),
            *queue.get_job_ids(),
            *queue.started_job_registry.get_job_ids(),
        )
        if job_id.startswith(prefix)
    ]
    if waiting:
        return None
    window = window_of(time.time(), conf)
    for candidate in (window, window + 1):
        mark = queue.connection.get(_window_mark_key(queue.name, candidate))
        if mark in (b"started", "started"):
            continue
        queue.connection.set(
            _window_mark_key(queue.name, candidate),
            "scheduled",
            ex=_mark_ttl(candidate, time.time(), conf),
        )
        job = _schedule_window(queue, candidate, conf)
        if job is not None:
            logger.info(
                "IndexNow window job scheduled queue=%s job=%s: URLs were pending",
                queue.name,
                job.id,
            )
            return str(job.id)
    return None
