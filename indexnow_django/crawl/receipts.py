"""From sightings to receipts, in the worker; and what the admin, ``indexnow_explain`` and the
report read of them.

While ``CRAWL["ENABLED"]``, each accepted POST's URLs are recorded with its history record
as waiting for crawlers (:func:`.waits.wait_for_crawlers`, one bulk INSERT of
:class:`~.models.CrawlWait` rows, found by the URL's digest through an index).

:func:`drain` takes the sightings the middleware kept (:mod:`.notice`) off their Redis
stream, a few hundred at a time (each sighting is taken by one drain only), verifies each
crawler (:mod:`.verify`), and for each verified fetch of a URL looks for the URL's latest
acceptance at the time of the fetch within ``CRAWL["DAYS"]`` (one indexed query per batch
of sightings). When the crawler has no receipt for that POST's flush yet, it records one
(:class:`~.models.CrawlReceipt`) and sends :data:`~indexnow_django.signals.url_crawled`.
A fetch of a URL never accepted, or fetched before its acceptance, records nothing. A
drain that fails (the database away) loses the sightings it took: receipts are a record
of what happened, not work to be done.

The acceptances of one flush (several engines, each accepting the same URLs within
seconds) are one wait: a crawler's receipt follows its own engine's acceptance when that
engine accepted the flush, else the flush's latest acceptance. A later accepted POST of
the URL (another flush) starts a new wait. With the shared ``indexnow`` endpoint,
acceptances are ``indexnow``'s, which every engine hears of.

rq's worker class (``indexnow_django.worker.Worker``) drains every few seconds while it
waits for jobs, as it looks for orphaned jobs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from typing import Any

from django.db import IntegrityError, router, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from ..conf import IndexNowSettings
from .crawlers import CRAWLERS
from .models import CrawlReceipt, CrawlWait, url_key
from .notice import STREAM_KEY, Sighting
from .verify import Resolver, Verifier, resolver_for

logger = logging.getLogger(__name__)

__all__ = [
    "DRAIN_BATCH",
    "after_text",
    "describe",
    "drain",
    "for_batch",
    "last_fetches",
]

#: Sightings taken off the stream at a time, and rounds of them per drain.
DRAIN_BATCH = 500
DRAIN_ROUNDS = 10

# Take up to ARGV[1] entries off the stream KEYS[1]: read and deleted at once, so that
# two workers draining together never take the same sighting.
_TAKE = """
local entries = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', tonumber(ARGV[1]))
for _, entry in ipairs(entries) do
    redis.call('XDEL', KEYS[1], entry[1])
end
return entries
"""

_scripts: dict[int, Any] = {}


def _take(connection: Any, count: int) -> list[Sighting]:
    script = _scripts.get(id(connection))
    if script is None:
        script = _scripts[id(connection)] = connection.register_script(_TAKE)
    found: list[Sighting] = []
    for _id, flat in script(keys=[STREAM_KEY], args=[count]):
        fields = dict(zip(flat[::2], flat[1::2], strict=False))
        seen = Sighting.from_fields(fields)
        if seen is not None:
            found.append(seen)
    return found


def drain(
    connection: Any,
    conf: IndexNowSettings,
    *,
    resolver: Resolver | None = None,
    batch: int = DRAIN_BATCH,
) -> list[CrawlReceipt]:
    """Turn the waiting sightings into receipts; return the receipts recorded."""
    from django.core.cache import caches

    verifier = Verifier(conf, resolver or resolver_for(conf), caches[conf.debounce_cache])
    recorded: list[CrawlReceipt] = []
    for _round in range(DRAIN_ROUNDS):
        sightings = _take(connection, batch)
        if sightings:
            believed = [s for s in sightings if verifier.verified(s.address, s.crawler)]
            dropped = len(sightings) - len(believed)
            if dropped:
                logger.info("IndexNow crawl: dropped=%d fetches by unverified crawlers", dropped)
            recorded.extend(record(believed, conf))
        if len(sightings) < batch:
            break
    return recorded


def _variants(url: str) -> list[str]:
    """The URL as submitted may differ from the request's in its scheme (a proxy that ends
    TLS without ``SECURE_PROXY_SSL_HEADER``) and in normalization."""
    from ..protocol.normalize import InvalidURL, normalize_url

    try:
        url = normalize_url(url)
    except InvalidURL:
        return []
    scheme, _, rest = url.partition("://")
    other = "http" if scheme == "https" else "https"
    return [url, f"{other}://{rest}"]


def record(sightings: Sequence[Sighting], conf: IndexNowSettings) -> list[CrawlReceipt]:
    """Receipts for the verified ``sightings`` that follow an acceptance (see the module)."""
    from .. import signals

    if not sightings:
        return []
    wanted = {s.url: [url_key(v) for v in _variants(s.url)] for s in sightings}
    keys = {key for found in wanted.values() for key in found}
    latest = max(s.at for s in sightings)
    since = timezone.now() - timedelta(days=conf.crawl_days)
    accepted: dict[str, list[CrawlWait]] = {}
    waits = CrawlWait.objects.filter(
        url_key__in=keys, accepted_at__gte=since, accepted_at__lte=_aware(latest)
    ).order_by()
    for wait in waits:
        accepted.setdefault(wait.url_key, []).append(wait)
    planned: list[tuple[Sighting, CrawlWait]] = []
    for seen in sorted(sightings, key=lambda s: s.at):
        follows = _follows(seen, [w for key in wanted[seen.url] for w in accepted.get(key, ())])
        if follows is not None:
            planned.append((seen, follows))
    if not planned:
        return []
    taken = set(
        CrawlReceipt.objects.filter(
            url_key__in={w.url_key for _, w in planned},
            batch_id__in={w.batch_id for _, w in planned},
        ).values_list("url_key", "crawler", "batch_id")
    )
    recorded: list[CrawlReceipt] = []
    with transaction.atomic(using=router.db_for_write(CrawlReceipt)):  # one commit
        for seen, follows in planned:
            key = (follows.url_key, seen.crawler, follows.batch_id)
            if key in taken:
                continue  # not the first fetch since that acceptance
            taken.add(key)
            receipt = _receipt(seen, follows)
            try:
                with transaction.atomic():
                    receipt.save()
            except IntegrityError:  # another drain recorded it meanwhile
                continue
            recorded.append(receipt)
    for receipt in recorded:
        logger.info(
            "IndexNow crawl: %s fetched %s %.0fs after its acceptance by %s status=%d",
            receipt.crawler,
            receipt.url,
            receipt.after,
            receipt.engine,
            receipt.status,
        )
        signals.crawled(receipt)
    return recorded


def _receipt(seen: Sighting, follows: CrawlWait) -> CrawlReceipt:
    return CrawlReceipt(
        url=follows.url,
        url_key=follows.url_key,
        crawler=seen.crawler,
        delivery_id=follows.delivery_id,
        engine=follows.engine,
        batch_id=follows.batch_id,
        accepted_at=follows.accepted_at,
        fetched_at=_aware(seen.at),
        after=round(max(0.0, seen.at - follows.accepted_at.timestamp()), 3),
        status=seen.status,
        address=seen.address,
    )


def _follows(seen: Sighting, candidates: Iterable[CrawlWait]) -> CrawlWait | None:
    """The acceptance ``seen`` follows: the latest at the fetch, its crawler's own engine's
    within that flush when there is one."""
    before = [w for w in candidates if w.accepted_at.timestamp() <= seen.at]
    if not before:
        return None
    latest = max(before, key=lambda w: w.accepted_at)
    flush = [w for w in before if w.batch_id == latest.batch_id]
    own = [w for w in flush if w.engine == CRAWLERS[seen.crawler].engine]
    return max(own or flush, key=lambda w: w.accepted_at)


def _aware(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, tz=dt_timezone.utc)


# --------------------------------------------------------------------------- reading


def for_batch(batch_id: str, urls: Sequence[str]) -> list[CrawlReceipt]:
    """The receipts of the flush ``batch_id`` for ``urls``, first fetch first."""
    keys = {url_key(url) for url in urls}
    found = CrawlReceipt.objects.filter(batch_id=batch_id).order_by("fetched_at")
    return [receipt for receipt in found if receipt.url_key in keys]


def last_fetches(urls: Iterable[str]) -> list[CrawlReceipt]:
    """The newest receipt of each crawler among ``urls``, newest first."""
    keys = [url_key(url) for url in dict.fromkeys(urls)]
    newest: dict[str, CrawlReceipt] = {}
    for receipt in CrawlReceipt.objects.filter(url_key__in=keys).order_by("-fetched_at"):
        newest.setdefault(receipt.crawler, receipt)
    return list(newest.values())


def label(crawler: str) -> str:
    """How people call the crawler ``crawler`` (``Bingbot``)."""
    found = CRAWLERS.get(crawler)
    return found.label if found is not None else crawler


def after_text(seconds: float) -> str:
    """``4 min``, ``12 s``, ``3 h``, ``2 days``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return ngettext("%(n)d s", "%(n)d s", seconds) % {"n": seconds}
    if seconds < 3600:
        minutes = seconds // 60
        return ngettext("%(n)d min", "%(n)d min", minutes) % {"n": minutes}
    if seconds < 86400:
        hours = seconds // 3600
        return ngettext("%(n)d h", "%(n)d h", hours) % {"n": hours}
    days = seconds // 86400
    return ngettext("%(n)d day", "%(n)d days", days) % {"n": days}


def describe(receipt: CrawlReceipt) -> str:
    """``fetched by Bingbot 4 min after acceptance`` (and the status when it was not 200)."""
    text = _("fetched by %(crawler)s %(after)s after acceptance") % {
        "crawler": label(receipt.crawler),
        "after": after_text(receipt.after),
    }
    if receipt.status != 200:
        text += " " + _("(answered %(status)d)") % {"status": receipt.status}
    return text


def as_dict(receipt: CrawlReceipt) -> dict[str, Any]:
    """A receipt as ``indexnow_explain --json`` and the signal give it."""
    return {
        "url": receipt.url,
        "crawler": receipt.crawler,
        "engine": receipt.engine,
        "accepted_at": receipt.accepted_at.isoformat(),
        "fetched_at": receipt.fetched_at.isoformat(),
        "after": receipt.after,
        "status": receipt.status,
    }
