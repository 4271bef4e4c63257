"""Coalesced delivery (``QUEUE["COALESCE"]`` seconds): the flushes of a window, from every
process, become one delivery.

Time is cut into windows of ``COALESCE`` seconds (window ``w`` is
``[w * COALESCE, (w + 1) * COALESCE)``, the same for every process). A flush in
window ``w`` makes one Redis round trip (:func:`add_to_window`, one Lua
script):

* its URLs go into the queue's pending hash (``indexnow:pending:<queue>``,
  URL → ``p`` public or ``g`` gone: a URL pending twice is one entry, its last
  side wins);
* the window's job, :func:`indexnow_django.jobs.deliver_window`, is put in
  rq's scheduled job registry at the end of the window (plus
  ``QUEUE["DELAY"]``) under the id ``indexnow-window-<queue>-<w>``, unless it
  is there already. Every flush of the window finds it there: one job per
  window, about 1 KB of Redis however many flushes it gathers.

When the window's job runs, :func:`take_pending` reads the pending hash and,
in one transaction, puts all of it in one ordinary delivery job (at the front
of the queue) and removes from the hash exactly what it read (an entry whose
side changed meanwhile stays). That delivery job is like any other: debounce,
one POST per host batch (up to ``BATCH["MAX_URLS"]``) and engine, retries per
engine, a heartbeat, and a worker's sweep that sends it again when its worker
died mid-POST. Until the transaction the URLs are in the pending hash, so a
worker killed before it loses nothing either: the next window's job, or the
sweep (:func:`ensure_window_job`, every few seconds in an idle worker), takes
them.

A flush that lands in a window whose job has already started (a clock a
little behind the worker's) schedules the next window's job instead: a job is
never written again under its own id while it runs.
"""

from __future__ import annotations

import logging
import math
import re
import time
import zlib
from collections.abc import Sequence
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
    "ensure_window_job",
    "pending_count",
    "pending_key",
    "take_pending",
    "window_job_id",
]


PUBLIC, GONE = "p", "g"

#: URL/side pairs given to one HSET of the scripts (Lua's stack holds ~8,000 values).
_CHUNK = 2000

# KEYS[1] pending hash, KEYS[2] job hash, KEYS[3] scheduled registry, KEYS[4] queues set
# ARGV[1] n, ARGV[2..2n+1] url/side pairs, then job id, ttl, due timestamp, queue key, and the
# job's field/value pairs (rq's own unique schedule, after the URLs).
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
local status = redis.call('HGET', KEYS[2], 'status')
if status == 'scheduled' then
    return 0
end
if status then
    return -1
end
redis.call('HSET', KEYS[2], unpack(ARGV, base + 4))
local ttl = tonumber(ARGV[base + 1])
if ttl and ttl > 0 then
    redis.call('EXPIRE', KEYS[2], ttl)
end
redis.call('ZADD', KEYS[3], tonumber(ARGV[base + 2]), ARGV[base])
redis.call('SADD', KEYS[4], ARGV[base + 3])
return 1
"""

# KEYS[1] pending hash; ARGV url/side pairs read: remove each that still has that side.
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


def pending_key(queue_name: str) -> str:
    """The Redis hash of the URLs waiting for the next window's job of ``queue_name``."""
    return f"indexnow:pending:{queue_name}"


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
    from rq.job import JobStatus

    job._status = JobStatus.SCHEDULED
    return job, due


def _hset_args(job: Job) -> list[Any]:
    args: list[Any] = []
    for field, value in job.to_dict().items():
        if value is not None:
            args += [field, value if isinstance(value, (bytes, str)) else str(value)]
    return args


def add_to_window(
    queue: Queue,
    urls: Sequence[str],
    gone: Sequence[str],
    conf: IndexNowSettings,
    *,
    now: float | None = None,
) -> str:
    """Add a flush's URLs to the pending hash and make sure the window's job is scheduled.

    One Redis round trip (two when the window's job has already started).
    Returns the id of the job that will send them. Raises on Redis errors.
    """
    window = window_of(time.time() if now is None else now, conf)
    gone_set = set(gone)
    pairs: list[str] = []
    for url in urls:
        pairs += [url, GONE if url in gone_set else PUBLIC]
    for attempt in range(2):
        job, due = _window_job(queue, window + attempt, conf)
        args = [len(urls), _CHUNK, *pairs, job.id, job.ttl or -1, due, queue.key, *_hset_args(job)]
        keys = [
            pending_key(queue.name),
            job.key,
            queue.scheduled_job_registry.key,
            queue.redis_queues_keys,
        ]
        if _script(queue.connection, _ADD)(keys=keys, args=args) >= 0:
            return str(job.id)
        pairs = []  # already pending; only the next window's job is wanted
        urls = []
    return str(job.id)


def take_pending(queue: Queue, conf: IndexNowSettings) -> tuple[Job | None, int]:
    """Put every pending URL of ``queue`` in one delivery job; return it and the URL count.

    The job goes to the front of the queue and the URLs it holds leave the
    pending hash in the same transaction: whatever happens to this process,
    each pending URL is either still pending or in the job.
    """
    from .queue import delivery_job, new_batch_id

    connection = queue.connection
    key = pending_key(queue.name)
    entries = connection.hgetall(key)
    if not entries:
        return None, 0
    urls: list[str] = []
    gone: list[str] = []
    pairs: list[Any] = []
    for raw_url, side in entries.items():
        url = raw_url.decode() if isinstance(raw_url, bytes) else str(raw_url)
        urls.append(url)
        if side in (GONE, GONE.encode()):
            gone.append(url)
        pairs += [raw_url, side]
    job = delivery_job(queue, urls, gone=gone, batch_id=new_batch_id(), conf=conf)
    take = _script(connection, _TAKE)
    with connection.pipeline() as pipe:
        queue.enqueue_job(job, pipeline=pipe, at_front=True)
        for start in range(0, len(pairs), 2 * _CHUNK):
            take(keys=[key], args=pairs[start : start + 2 * _CHUNK], client=pipe)
        pipe.execute()
    return job, len(urls)


def pending_count(queue: Queue) -> int:
    return int(queue.connection.hlen(pending_key(queue.name)))


def ensure_window_job(queue: Queue, conf: IndexNowSettings) -> str | None:
    """Schedule the current window's job when URLs are pending and no window job waits.

    The pending URLs are sent whatever became of the flush that added them
    (its second round trip failed, a window job died before taking them).
    Returns the id of the job scheduled, if any.
    """
    if conf.queue_coalesce <= 0 or not pending_count(queue):
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
    job_id = add_to_window(queue, [], [], conf)
    logger.info(
        "IndexNow window job scheduled queue=%s job=%s: URLs were pending", queue.name, job_id
    )
    return job_id
