"""Repeated failures escalate: after :data:`FAILURES_BEFORE_CRITICAL` failed POSTs in a row
for one host and engine, one CRITICAL log line; when it recovers, one line that says so.

One failed POST is an ERROR (final) or a retry like any other; a run of them is a
site that nothing reaches the engine from, worth paging for: 403s (the key file is
missing or wrong), 429s for days, 5xx, timeouts. Every failure counts, final or
retryable. The count is per host and engine and lives in the debounce cache
(``DEBOUNCE["CACHE"]``), which every web process and worker shares: an atomic
increment on Redis, so the line is written once, by whichever process sees the
fifth failure. The next accepted POST for the host and engine starts the count
over, and when the count had reached the line, logs (WARNING) that it recovered.

The CRITICAL line goes through the logger ``indexnow_django.escalation``: a site
whose ``LOGGING`` mails ERRORs to its admins (Django's ``AdminEmailHandler``, the
default with ``ADMINS`` set) gets a mail with nothing more to set up.

Dry runs neither count nor reset. When the cache cannot be reached nothing is
counted, and deliveries go on.
"""

from __future__ import annotations

import hashlib
import logging

from django.core.cache import BaseCache, caches

from ..compat import redis_cache_client
from ..conf import IndexNowSettings
from ..protocol.client import Outcome, PostResult

#: The documented name of the alert's logger (docs/monitoring.md), whichever module it
#: lives in: a site routes it to its alerts.
logger = logging.getLogger("indexnow_django.escalation")

__all__ = ["FAILURES_BEFORE_CRITICAL", "answer_of", "observe"]

#: Consecutive failed POSTs for a host and engine that make one CRITICAL line.
FAILURES_BEFORE_CRITICAL = 5
#: Seconds a count is kept since its last failure: a week of silence starts it over.
COUNT_TTL = 7 * 24 * 3600
#: The last answers a count keeps, to name them in its lines.
ANSWERS_KEPT = FAILURES_BEFORE_CRITICAL

KEY_PREFIX = "indexnow:failures:"


def answer_of(result: PostResult) -> str:
    """A failed POST's answer in a word: its status, or the network error's name."""
    if result.status is not None:
        return str(result.status)
    return result.error or "no answer"


def observe(result: PostResult, conf: IndexNowSettings) -> None:
    """Count ``result`` for its host and engine; write a line at the count or on recovery.
    Never raises. An accepted POST costs one round trip to the cache, a failure one."""
    if result.dry_run:
        return
    digest = hashlib.blake2s(
        f"{result.host}\n{result.engine.name}".encode(), digest_size=8
    ).hexdigest()
    key = KEY_PREFIX + digest
    try:
        cache = caches[conf.debounce_cache]
        if result.accepted:
            count, answers = _reset(cache, key)
        else:
            count, answers = _count(cache, key, answer_of(result))
    except Exception as exc:
        logger.warning(
            "IndexNow could not count failures host=%s engine=%s in cache %r: %s: %s",
            result.host,
            result.engine.name,
            conf.debounce_cache,
            type(exc).__name__,
            exc,
        )
        return
    if result.accepted:
        if count >= FAILURES_BEFORE_CRITICAL:
            logger.warning(
                "IndexNow host=%s engine=%s recovered: accepted after %d failed POSTs in a row "
                "(last answers: %s).",
                result.host,
                result.engine.name,
                count,
                ", ".join(answers) or "-",
            )
        return
    if count != FAILURES_BEFORE_CRITICAL:
        return
    advice = "Submissions for this host do not reach the engine until it is fixed."
    if result.outcome is Outcome.REJECTED and result.status == 403:
        host_conf = conf.host_config(result.host)
        key_file = host_conf.masked_key_file_url if host_conf is not None else "-"
        advice = f"The engine cannot verify the key: check the key file {key_file}. " + advice
    elif result.outcome is Outcome.RETRY:
        advice = "The URLs are retried, but none gets through."
    logger.critical(
        "IndexNow host=%s engine=%s failed %d times in a row (answers: %s). %s "
        "See manage.py indexnow_check.",
        result.host,
        result.engine.name,
        count,
        ", ".join(answers),
        advice,
    )


def _count(cache: BaseCache, key: str, answer: str) -> tuple[int, list[str]]:
    """The count after one more failure, and the last answers, newest last."""
    target = redis_cache_client(cache)
    answers_key = key + ":answers"
    if target is not None:  # one round trip, with the bounded timeouts of the debounce store
        client, make_key = target
        pipe = client.pipeline(transaction=False)
        pipe.incr(make_key(key))
        pipe.expire(make_key(key), COUNT_TTL)
        pipe.rpush(make_key(answers_key), answer)
        pipe.ltrim(make_key(answers_key), -ANSWERS_KEPT, -1)
        pipe.expire(make_key(answers_key), COUNT_TTL)
        pipe.lrange(make_key(answers_key), 0, -1)
        replies = pipe.execute()
        return int(replies[0]), [_text(item) for item in replies[-1]]
    cache.add(key, 0, COUNT_TTL)
    try:
        count = int(cache.incr(key))
    except ValueError:  # expired between the two calls
        cache.add(key, 1, COUNT_TTL)
        count = 1
    cache.touch(key, COUNT_TTL)
    answers = [*(cache.get(answers_key) or []), answer][-ANSWERS_KEPT:]
    cache.set(answers_key, answers, COUNT_TTL)
    if count == FAILURES_BEFORE_CRITICAL:
        cache.set(key + ":alerted", True, COUNT_TTL)
    return count, answers


def _reset(cache: BaseCache, key: str) -> tuple[int, list[str]]:
    """Start the count over; return what it was, and its last answers."""
    target = redis_cache_client(cache)
    answers_key = key + ":answers"
    if target is not None:
        client, make_key = target
        pipe = client.pipeline(transaction=True)  # one process sees the count, the others 0
        pipe.get(make_key(key))
        pipe.lrange(make_key(answers_key), 0, -1)
        pipe.delete(make_key(key), make_key(answers_key))
        stored, listed, _ = pipe.execute()
        return int(stored or 0), [_text(item) for item in listed]
    # Plain deletes while nothing was wrong (a delete says whether there was something):
    # the line was written when the count reached it, so the count is read only then.
    count = 0
    answers: list[str] = []
    if cache.delete(key + ":alerted"):
        count = int(cache.get(key) or FAILURES_BEFORE_CRITICAL)
        answers = list(cache.get(answers_key) or [])
    cache.delete(key)
    cache.delete(answers_key)
    return count, answers


def _text(item: bytes | str) -> str:
    return item.decode() if isinstance(item, bytes) else str(item)
