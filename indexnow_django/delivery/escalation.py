"""Repeated rejections escalate: after :data:`REJECTIONS_BEFORE_CRITICAL` 403s in a row
for one host, one CRITICAL log line.

A 403 that is final (the key file is missing or does not hold the key) is a
site that cannot submit anything until someone fixes it; one such answer is an
ERROR like any rejection, but a run of them is worth paging for. The count is
per host, whatever the engine, and lives in the debounce cache
(``DEBOUNCE["CACHE"]``), which every web process and worker shares: an atomic
increment on Redis, so the line is written once, by whichever process sees the
fifth 403. The next accepted POST for the host starts the count over.

A 403 that asks to retry (``SiteVerificationNotCompleted``, while an engine has
not yet fetched a new key file) does not count: it is the normal state of a new
key for a while. Other answers (429, 5xx, network errors) neither count nor
reset. When the cache cannot be reached nothing is counted, and deliveries go on.
"""

from __future__ import annotations

import hashlib
import logging

from django.core.cache import BaseCache, caches

from ..compat import redis_cache_client
from ..conf import IndexNowSettings
from ..protocol.client import Outcome, PostResult

logger = logging.getLogger(__name__)

__all__ = ["REJECTIONS_BEFORE_CRITICAL", "observe"]

#: Consecutive final 403s for a host that make one CRITICAL line.
REJECTIONS_BEFORE_CRITICAL = 5
#: Seconds a count is kept since its last 403: a week of silence starts it over.
COUNT_TTL = 7 * 24 * 3600

KEY_PREFIX = "indexnow:rejected403:"


def observe(result: PostResult, conf: IndexNowSettings) -> None:
    """Count ``result`` for its host; write the CRITICAL line at the count. Never raises.

    An accepted POST costs one delete, a 403 one increment; nothing else is asked.
    """
    if result.dry_run:
        return
    rejected = result.outcome is Outcome.REJECTED and result.status == 403
    if not rejected and not result.accepted:
        return
    key = KEY_PREFIX + hashlib.blake2s(result.host.encode(), digest_size=8).hexdigest()
    try:
        count = _count(caches[conf.debounce_cache], key, reset=result.accepted)
    except Exception as exc:
        logger.warning(
            "IndexNow could not count rejections host=%s in cache %r: %s: %s",
            result.host,
            conf.debounce_cache,
            type(exc).__name__,
            exc,
        )
        return
    if count == REJECTIONS_BEFORE_CRITICAL:
        host_conf = conf.host_config(result.host)
        key_file = host_conf.masked_key_file_url if host_conf is not None else "-"
        logger.critical(
            "IndexNow host=%s rejected %d times in a row (403): engines cannot verify the key; "
            "check the key file %s (manage.py indexnow_check). Submissions for this host "
            "fail until it is fixed.",
            result.host,
            count,
            key_file,
        )


def _count(cache: BaseCache, key: str, *, reset: bool) -> int:
    """The host's count after one more 403, or ``0`` after ``reset``."""
    target = redis_cache_client(cache)
    if target is not None:  # one round trip, with the bounded timeouts of the debounce store
        client, make_key = target
        if reset:
            client.delete(make_key(key))
            return 0
        pipe = client.pipeline(transaction=False)
        pipe.incr(make_key(key))
        pipe.expire(make_key(key), COUNT_TTL)
        return int(pipe.execute()[0])
    if reset:
        cache.delete(key)
        return 0
    cache.add(key, 0, COUNT_TTL)
    try:
        count = int(cache.incr(key))
    except ValueError:  # expired between the two calls
        cache.add(key, 1, COUNT_TTL)
        count = 1
    cache.touch(key, COUNT_TTL)
    return count
