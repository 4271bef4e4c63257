"""Send URLs to the engines now: debounce, group by host, split, POST.

This is what a worker's job, the synchronous dispatch and
``indexnow_submit --sync`` all call. It does no retrying itself: the
:class:`DeliveryReport` says which URLs and engines want another attempt,
and the caller (``jobs.py``) schedules it.

A delivery that has several POSTs to make (many hosts, several engines) makes
up to :data:`POST_CONCURRENCY` of them at once, each in a thread of its own
with its own client; the debounce claims, the throttle, the history and the
report stay in the calling thread, in order. Given a ``deadline``, it starts
no POST after it: what it did not start is in :attr:`DeliveryReport.left`, for
the caller to hand to a new job, so that a job never outlives its timeout
however many hosts a flush touched.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from .. import signals
from ..conf import HostConfig, IndexNowSettings, get_settings
from ..protocol.client import Engine, IndexNowClient, Outcome, PostResult
from ..protocol.normalize import host_of, normalize_urls
from . import escalation, preflight
from .debounce import Claim, DebounceStore
from .history import attempt_of, record
from .throttle import Throttle

logger = logging.getLogger(__name__)

__all__ = [
    "POST_CONCURRENCY",
    "DeliveryReport",
    "chunked",
    "clean_urls",
    "deliver_now",
    "gone_urls",
    "make_client",
    "make_debounce",
]


#: POSTs one delivery makes at once (to several hosts, or engines). Bounded so
#: that a flush touching hundreds of hosts does not open hundreds of connections.
POST_CONCURRENCY = 8


def chunked(items: Iterable[str], size: int) -> Iterator[list[str]]:
    """Yield lists of at most ``size`` items, consuming ``items`` lazily (a list is sliced)."""
    if isinstance(items, list):
        if len(items) <= size:
            yield items
            return
        for start in range(0, len(items), size):
            yield items[start : start + size]
        return
    chunk: list[str] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@dataclass
class Deferred:
    """URLs of one host for one engine that the throttle holds back: the first POST of them
    is due in ``delay`` seconds, in the slot taken for it (``slot``, a Unix time)."""

    engine: Engine
    host: str
    urls: list[str]
    delay: float
    slot: float


@dataclass
class DeliveryReport:
    """What one delivery did, per POST."""

    results: list[PostResult] = field(default_factory=list)
    #: URL count left out per engine name because it was accepted within the TTL.
    debounced: dict[str, int] = field(default_factory=dict)
    #: ``(url, reason)`` for URLs dropped before sending (foreign host, invalid).
    dropped: list[tuple[str, str]] = field(default_factory=list)
    #: The normalized URLs that were sent as gone (their page is gone).
    gone: frozenset[str] = frozenset()
    #: POSTs held back by the throttle, to be sent at their slot (see :class:`Deferred`).
    deferred: list[Deferred] = field(default_factory=list)
    #: ``(engine, urls)`` of the POSTs not started because the deadline passed.
    left: list[tuple[Engine, list[str]]] = field(default_factory=list)
    #: ``(url, reason)`` for public URLs the preflight held back (``PREFLIGHT``).
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def accepted(self) -> list[PostResult]:
        return [r for r in self.results if r.outcome is Outcome.ACCEPTED]

    @property
    def retryable(self) -> list[PostResult]:
        return [r for r in self.results if r.outcome is Outcome.RETRY]

    @property
    def rejected(self) -> list[PostResult]:
        return [r for r in self.results if r.outcome is Outcome.REJECTED]

    @property
    def sent_count(self) -> int:
        return sum(len(r.urls) for r in self.accepted)

    @property
    def debounced_count(self) -> int:
        return sum(self.debounced.values())


def clean_urls(
    urls: Iterable[str], conf: IndexNowSettings
) -> tuple[list[str], list[tuple[str, str]]]:
    """Normalize ``urls`` against the settings; warn once about the dropped ones."""
    if not isinstance(urls, (list, tuple)):
        urls = list(urls)
    result = normalize_urls(urls, conf.base_url, conf.hosts)
    if result.rejected and conf.reread_hosts():  # a tenant added since the last read
        result = normalize_urls(urls, conf.base_url, conf.hosts)
    if result.rejected:
        shown = ", ".join(f"{url!r} ({reason})" for url, reason in result.rejected[:10])
        more = len(result.rejected) - 10
        logger.warning(
            "IndexNow dropped %d URL(s): %s%s",
            len(result.rejected),
            shown,
            f" and {more} more" if more > 0 else "",
        )
    return result.valid, result.rejected


def gone_urls(valid: list[str], gone: Collection[str], conf: IndexNowSettings) -> list[str]:
    """Those of the normalized ``valid`` URLs that ``gone`` (raw URLs) names."""
    if not gone:
        return []
    named = set(normalize_urls(gone, conf.base_url).valid)
    return [url for url in valid if url in named]


def make_client(conf: IndexNowSettings) -> IndexNowClient:
    return IndexNowClient(timeout=conf.http_timeout, dry_run=conf.dry_run, keys=conf.all_keys())


def make_debounce(conf: IndexNowSettings) -> DebounceStore:
    return DebounceStore(
        conf.debounce_cache,
        conf.debounce_ttl,
        claim_ttl=int(conf.http_timeout * 2) + 30,
    )


def deliver_now(
    urls: Iterable[str],
    *,
    gone: Iterable[str] = (),
    engines: Sequence[str] | None = None,
    force: bool = False,
    batch_id: str = "-",
    conf: IndexNowSettings | None = None,
    client: IndexNowClient | None = None,
    normalized: bool = False,
    attempt: int | None = None,
    wait: bool = True,
    slot: float | None = None,
    on_wait: Callable[[Engine, float], None] | None = None,
    deadline: float | None = None,
) -> DeliveryReport:
    """POST ``urls`` to the engines (all configured, or those named in ``engines``).

    ``gone``: those of ``urls`` whose page is gone (unpublished, deleted); the
    others are public. A URL that changed side since an engine accepted it is
    sent again within the TTL. ``urls`` may be relative; they are normalized
    and foreign hosts dropped, unless ``normalized`` says the caller did that
    already (canonical URLs on allowed hosts, no duplicates). ``attempt``: the
    number of this attempt, when the caller knows it (else the running job's).

    The throttle (``THROTTLE``) gives each POST its slot: ``wait`` (a command, a
    synchronous send) sleeps until then, calling ``on_wait(engine, seconds)``
    first; otherwise (a worker's job) the POST and every later one to that
    engine are left in :attr:`DeliveryReport.deferred` for the caller to send
    at the slot. ``slot``: a slot already taken (a deferred job's), for the
    first POST to the only engine in ``engines``.

    ``client``: the one client to post with (POSTs are then made one after
    another). ``deadline`` (``time.monotonic()``): no POST starts after it;
    see the module.
    Never raises for an engine's answer; see :class:`DeliveryReport`.
    """
    conf = conf or get_settings()
    report = DeliveryReport()
    if not conf.enabled:
        return report
    if normalized:
        valid = urls if isinstance(urls, list) else list(urls)
        report.gone = frozenset(gone)
    else:
        valid, report.dropped = clean_urls(urls, conf)
        report.gone = frozenset(
            gone_urls(valid, gone if isinstance(gone, Collection) else list(gone), conf)
        )
    if conf.preflight_enabled and (attempt or 1) == 1:  # a retry sends what was screened
        valid, report.skipped = preflight.screen(valid, report.gone, batch_id=batch_id, conf=conf)
    if not valid:
        return report
    store = make_debounce(conf)
    selected: tuple[Engine, ...] = conf.engines
    if engines is not None:
        wanted = set(engines)
        selected = tuple(e for e in conf.engines if e.endpoint in wanted or e.name in wanted)
    hosts = conf.hosts
    posts: list[_Post] = []
    for host, host_urls in _by_host(valid).items():
        host_conf = hosts.get(host)
        if host_conf is None:  # removed from the hosts since the URLs were checked
            report.dropped.extend((url, f"host {host!r} is no longer allowed") for url in host_urls)
            continue
        for chunk in chunked(host_urls, conf.max_urls):
            posts.extend(_Post(host_conf, chunk, engine) for engine in selected)
    throttle = Throttle(conf.debounce_cache, None if conf.dry_run else conf.throttle_per_minute)
    sender = _Sender(conf, store, throttle, report, force, batch_id, attempt, wait, slot, on_wait)
    if client is not None or len(posts) <= 1:
        sender.in_turn(posts, client or make_client(conf), deadline)
    else:
        sender.at_once(posts, deadline)
    report.deferred.extend(sender.held.values())
    for name, count in report.debounced.items():
        logger.info("IndexNow debounced batch=%s engine=%s count=%d", batch_id, name, count)
    return report


@dataclass(frozen=True)
class _Post:
    """One POST to make: a chunk of one host's URLs, to one engine."""

    host: HostConfig
    urls: list[str]
    engine: Engine

    def send(self, client: IndexNowClient, claim: Claim) -> PostResult:
        return client.post(
            self.engine, self.host.host, self.host.key, claim.urls, self.host.key_location
        )


@dataclass
class _Sender:
    """Makes the POSTs of one delivery: claims, the throttle and what follows each POST in
    the calling thread; the POSTs themselves one after another or several at once."""

    conf: IndexNowSettings
    store: DebounceStore
    throttle: Throttle
    report: DeliveryReport
    force: bool
    batch_id: str
    attempt: int | None
    wait: bool
    slot: float | None
    on_wait: Callable[[Engine, float], None] | None
    #: Per engine endpoint and host, what the throttle holds back.
    held: dict[tuple[str, str], Deferred] = field(default_factory=dict)

    def prepare(self, post: _Post, deadline: float | None) -> Claim | None:
        """The claim to send for ``post`` now, or ``None`` (left, debounced, held back)."""
        if deadline is not None and time.monotonic() >= deadline:
            self.report.left.append((post.engine, post.urls))
            return None
        engine, store = post.engine, self.store
        claim = store.claim(engine, post.urls, gone=self.report.gone, force=self.force)
        if claim.debounced:
            debounced = self.report.debounced
            debounced[engine.name] = debounced.get(engine.name, 0) + claim.debounced
        if not claim.urls:
            return None
        budget = (engine.endpoint, post.host.host)
        if budget in self.held:  # an earlier POST of this delivery waits already
            store.release(claim)
            self.held[budget].urls.extend(claim.urls)
            return None
        if self.throttle.enabled:
            later = _throttle(
                self.throttle,
                engine,
                post.host.host,
                self.slot,
                self.wait,
                self.on_wait,
                self.batch_id,
            )
            self.slot = None  # a slot carried over is for the first POST only
            if later is not None:
                store.release(claim)
                self.held[budget] = Deferred(engine, post.host.host, list(claim.urls), *later)
                return None
        return claim

    def settle(self, claim: Claim, result: PostResult) -> None:
        conf, store = self.conf, self.store
        _log_post(result, self.batch_id)
        _after_post(result, self.batch_id, conf, self.attempt, count=not store.unreachable)
        if result.accepted and not conf.dry_run:
            store.record(claim)
        else:
            store.release(claim)
        self.report.results.append(result)

    def in_turn(self, posts: list[_Post], client: IndexNowClient, deadline: float | None) -> None:
        for post in posts:
            claim = self.prepare(post, deadline)
            if claim is not None:
                self.settle(claim, post.send(client, claim))

    def at_once(self, posts: list[_Post], deadline: float | None) -> None:
        """Up to :data:`POST_CONCURRENCY` POSTs in flight, each thread with its own client."""
        local = threading.local()

        def send(post: _Post, claim: Claim) -> PostResult:
            client = getattr(local, "client", None)
            if client is None:
                client = local.client = make_client(self.conf)
            return post.send(client, claim)

        workers = min(POST_CONCURRENCY, len(posts))
        in_flight: dict[Future[PostResult], Claim] = {}
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="indexnow-post") as pool:
            for post in posts:
                while len(in_flight) >= workers:
                    self.settle_answered(in_flight)
                claim = self.prepare(post, deadline)
                if claim is not None:
                    in_flight[pool.submit(send, post, claim)] = claim
            while in_flight:
                self.settle_answered(in_flight)

    def settle_answered(self, in_flight: dict[Future[PostResult], Claim]) -> None:
        """Settle the POSTs in flight that have their answer, as soon as the first has: an
        accepted POST is recorded while a slower one still waits, so that a worker that dies
        then sends again only what no engine took."""
        answered, _ = wait(in_flight, return_when=FIRST_COMPLETED)
        for future in answered:
            self.settle(in_flight.pop(future), future.result())


def _throttle(
    throttle: Throttle,
    engine: Engine,
    host: str,
    slot: float | None,
    wait: bool,
    on_wait: Callable[[Engine, float], None] | None,
    batch_id: str,
) -> tuple[float, float] | None:
    """Hold the next POST to ``engine`` for ``host`` until the throttle admits it: ``None``
    once it may go (after sleeping, when ``wait``), else ``(delay, slot)`` to send it
    later."""
    if slot is not None:
        delay, taken = max(0.0, slot - time.time()), slot
    else:
        delay = throttle.take(engine, host)
        taken = time.time() + delay
    while True:
        if delay > 0 and not wait:
            return delay, taken
        if delay > 0:
            if on_wait is not None:
                on_wait(engine, delay)
            logger.info(
                "IndexNow throttle batch=%s engine=%s host=%s waits %.1fs",
                batch_id,
                engine.name,
                host,
                delay,
            )
            time.sleep(delay)
        delay = throttle.admit(engine, host)
        if delay <= 0:
            return None
        taken = time.time() + delay


def _after_post(
    result: PostResult,
    batch_id: str,
    conf: IndexNowSettings,
    attempt: int | None,
    *,
    count: bool,
) -> None:
    """Everything that follows a POST: the history record, the count of rejections
    (:mod:`~indexnow_django.sending.escalation`; not when ``count`` is false, as when the shared
    cache just failed to answer), the ``post_sent`` signal."""
    if attempt is None:
        attempt = attempt_of(batch_id, result)
    record(result, batch_id=batch_id, conf=conf, attempt=attempt)
    if count:
        escalation.observe(result, conf)
    signals.sent(result, attempt=attempt, batch_id=batch_id, dry_run=conf.dry_run)


def _by_host(urls: list[str]) -> dict[str, list[str]]:
    """Normalized ``urls`` grouped by host, in order; one look at the whole list when
    they share one host (as a bulk submission's batches do)."""
    first = host_of(urls[0])
    prefix = "\n" + urls[0][: urls[0].index(first) + len(first) + 1]
    # One line per URL (no URL holds a line break): count those starting with the prefix.
    # Looking URL by URL would spare the joined copy (a megabyte for a bulk submission's
    # batch) but cost a third of a second for a million URLs; the peak is the same.
    lines = "\n" + "\n".join(urls)
    if lines.count(prefix) == len(urls) == lines.count("\n"):
        return {first: urls}
    by_host: dict[str, list[str]] = defaultdict(list)
    for url in urls:
        by_host[host_of(url)].append(url)
    return by_host


def _log_post(result: PostResult, batch_id: str) -> None:
    logger.info(
        "IndexNow POST batch=%s engine=%s host=%s count=%d status=%s outcome=%s%s",
        batch_id,
        result.engine.name,
        result.host,
        len(result.urls),
        result.status if result.status is not None else "-",
        "dry_run" if result.dry_run else result.outcome.value,  # as the history records it
        " error=" + result.error if result.error else "",
    )
