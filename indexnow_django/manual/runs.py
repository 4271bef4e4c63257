"""A submission run: entries in, batches per host out, each URL counted by what became of it.

:class:`SubmissionRun` takes the entries a person gave (read by
:mod:`indexnow_django.manual.entries` and :mod:`indexnow_django.manual.sources`), checks
each, drops duplicates, fills one buffer per host and, once a buffer holds
``BATCH["MAX_URLS"]`` URLs (and at the end), hands it on: listed for a dry
run, queued on the chosen transport (:mod:`indexnow_django.transports`), or sent from this process
with :func:`~indexnow_django.sending.send.deliver_now`, retried after the delays
:meth:`~indexnow_django.protocol.client.RetryPolicy.plan` gives (``--sync``, or when the
queue cannot take a job). Its :class:`Counts` tell the truth about every URL.

What a person sees of it goes through a :class:`Reporter`: ``manage.py
indexnow_submit`` prints it, another caller may keep it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import signals
from ..conf import IndexNowSettings
from ..protocol.client import Engine, IndexNowClient, Outcome, PostResult, excerpt
from ..protocol.normalize import (
    InvalidURL,
    foreign_host_reason,
    host_of,
    normalize_entry,
    normalize_url,
)
from .entries import Entry, Ready

if TYPE_CHECKING:
    from django.http import HttpResponseBase

__all__ = ["Counts", "Reporter", "SubmissionRun", "send_urls"]

_STATE = {Outcome.ACCEPTED: "accepted", Outcome.RETRY: "failed", Outcome.REJECTED: "rejected"}
_RANK = {"accepted": 0, "not_sent": 1, "failed": 2, "rejected": 3}


@dataclass
class Counts:
    read: int = 0
    valid: int = 0
    invalid: int = 0
    duplicates: int = 0
    debounced: int = 0
    queued: int = 0
    jobs: int = 0
    #: Sent from this process because the queue could not take the job.
    fallback: int = 0
    accepted: int = 0
    rejected: int = 0
    failed: int = 0
    #: Not sent: ``--dry-run``, or ``DRY_RUN`` in the settings.
    not_sent: int = 0
    #: Not sent: the preflight found that the page says it should not be indexed.
    skipped: int = 0


class Reporter:
    """What a run tells as it goes; this one keeps quiet."""

    def would_send(self, host: str, urls: list[str], debounced: int) -> None:
        """A dry run: ``urls`` of ``host`` would be sent (``debounced`` left out)."""

    def queued(self, host: str, count: int, job_id: str, batch_id: str) -> None:
        """A job was queued for ``count`` URLs of ``host``."""

    def retrying(self, count: int, delay: float, attempt: int, max_attempts: int) -> None:
        """``count`` URLs are sent again in ``delay`` seconds, as attempt ``attempt``."""

    def waiting(self, engine: Engine, seconds: float) -> None:
        """The throttle holds the next POST to ``engine`` for ``seconds``."""

    def warning(self, text: str) -> None:
        """Something that went other than asked (the queue is down)."""

    def invalid(self, entry: Entry, reason: str, count: int) -> None:
        """``entry`` is skipped for ``reason``; ``count``: invalid entries so far."""

    def answer(self, result: PostResult, attempt: int) -> None:
        """An engine answered a POST sent from this process, at attempt ``attempt``."""

    def progress(self, force: bool = False) -> None:
        """The counts moved (``force``: a batch was handed on)."""


class SubmissionRun:
    """One submission of many entries; see the module. ``live``: the reporter shows
    progress, so it is told as the counts move, not only per batch."""

    def __init__(
        self,
        conf: IndexNowSettings,
        *,
        force: bool = False,
        dry_run: bool = False,
        sync: bool = False,
        reporter: Reporter | None = None,
        live: bool = False,
    ) -> None:
        self.conf = conf
        self.force = force
        self.dry_run = dry_run
        self.sync = sync
        self.reporter = reporter or Reporter()
        self.live = live
        self.counts = Counts()
        #: What went wrong, one line per final answer that was not an acceptance.
        self.failures: list[str] = []
        #: What to do about the failures.
        self.hint = "Run manage.py indexnow_check."
        #: Set once the queue failed to take a job: the rest is sent from here.
        self.queue_down = False
        self._client: IndexNowClient | None = None

    # ------------------------------------------------------------------ batching

    def feed(self, entries: Iterable[Entry | Ready]) -> None:
        """Check, buffer and hand on every entry; the last partial buffers too."""
        conf = self.conf
        base_url = conf.base_url
        hosts = conf.hosts
        max_urls = conf.max_urls
        counts = self.counts
        live = self.live
        buffers: dict[str, dict[str, None]] = {}
        for entry in entries:
            if isinstance(entry, Ready):
                self._take(buffers, entry.host, entry.urls)
                continue
            counts.read += 1
            if entry.problem is not None:
                self._invalid(entry, entry.problem)
                continue
            try:
                if entry.typed:
                    url = normalize_entry(entry.raw, base_url)
                else:
                    url = normalize_url(entry.raw, base_url)
            except InvalidURL as exc:
                self._invalid(entry, str(exc))
                continue
            host = host_of(url)
            if host not in hosts:
                self._invalid(entry, foreign_host_reason(host, hosts, base_url))
                continue
            counts.valid += 1
            buffer = buffers.setdefault(host, {})
            if url in buffer:
                counts.duplicates += 1
                continue
            buffer[url] = None
            if len(buffer) >= max_urls:
                del buffers[host]
                self._send(host, list(buffer))
            elif live:
                self.reporter.progress()
        for host, buffer in buffers.items():
            self._send(host, list(buffer))

    def _take(self, buffers: dict[str, dict[str, None]], host: str, urls: list[str]) -> None:
        """What :meth:`feed` does URL by URL, for valid ``urls`` of ``host``, a slice at a time."""
        counts = self.counts
        counts.read += len(urls)
        counts.valid += len(urls)
        max_urls = self.conf.max_urls
        start = 0
        while start < len(urls):
            buffer = buffers.setdefault(host, {})
            # At most the URLs that fill the buffer: it is sent once full, as in feed.
            taken = urls[start : start + max_urls - len(buffer)]
            start += len(taken)
            before = len(buffer)
            buffer.update(dict.fromkeys(taken))
            counts.duplicates += len(taken) - (len(buffer) - before)
            if len(buffer) >= max_urls:
                del buffers[host]
                self._send(host, list(buffer))
        if self.live:
            self.reporter.progress()

    def _invalid(self, entry: Entry, reason: str) -> None:
        self.counts.invalid += 1
        self.reporter.invalid(entry, reason, self.counts.invalid)

    def _send(self, host: str, urls: list[str]) -> None:
        if self.dry_run:
            self._dry_run(host, urls)
        elif self.sync:
            self._send_now(urls)
        else:
            self._enqueue(host, urls)
        self.reporter.progress(force=True)

    def _not_debounced(self, urls: list[str]) -> list[str]:
        """``urls`` less those every engine accepted within the TTL (read-only look-up)."""
        if self.force:
            return urls
        from ..sending.send import make_debounce

        store = make_debounce(self.conf)
        if not store.enabled:
            return urls
        wanted: set[str] = set()
        for engine in self.conf.engines:
            wanted.update(store.filter_new(engine, urls))
        return [url for url in urls if url in wanted]

    # ------------------------------------------------------------------ handing on

    def _dry_run(self, host: str, urls: list[str]) -> None:
        fresh = self._not_debounced(urls)
        self.counts.debounced += len(urls) - len(fresh)
        self.counts.not_sent += len(fresh)
        self.reporter.would_send(host, fresh, len(urls) - len(fresh))

    def _enqueue(self, host: str, urls: list[str]) -> None:
        from ..sending.parcel import Parcel
        from ..transports import chosen

        fresh = self._not_debounced(urls)
        self.counts.debounced += len(urls) - len(fresh)
        if not fresh:
            return
        parcel = Parcel.of(fresh, force=self.force)
        if self.queue_down:
            self._send_now(fresh, batch_id=parcel.batch_id, fallback=True)
            return
        transport = chosen(self.conf)
        try:
            enqueued = transport.enqueue(parcel, self.conf.queue_delay)
        except Exception as exc:  # Redis down, full, read-only: the URLs go out from here
            self.queue_down = True
            self.reporter.warning(
                f"The {transport.describe} cannot take jobs ({type(exc).__name__}: "
                f"{excerpt(str(exc), 200)}): sending from this process instead."
            )
            self._send_now(fresh, batch_id=parcel.batch_id, fallback=True)
            return
        self.counts.jobs += 1
        self.counts.queued += len(fresh)
        if enqueued.failed is not None:
            # A synchronous queue (ASYNC: False) ran the job here and then: its failure
            # is this run's to tell.
            self.counts.failed += len(fresh)
            self.failures.append(f"job {enqueued.id} failed: {excerpt(enqueued.failed)}")
        self.reporter.queued(host, len(fresh), enqueued.id, parcel.batch_id)

    # ------------------------------------------------------------------ sending from here

    def _send_now(self, urls: list[str], *, batch_id: str = "", fallback: bool = False) -> None:
        """Send ``urls`` from this process, retrying what the engines ask to be retried."""
        from ..sending.parcel import new_batch_id
        from ..sending.run import rejection_hint
        from ..sending.send import deliver_now, make_client

        conf = self.conf
        if self._client is None:
            self._client = make_client(conf)
        batch_id = batch_id or new_batch_id()
        report = deliver_now(
            urls,
            force=self.force,
            batch_id=batch_id,
            conf=conf,
            client=self._client,
            normalized=True,
            attempt=1,
            on_wait=self.reporter.waiting,
        )
        # Each engine's answers, and the attempt each came at, in order.
        answers: dict[str, list[tuple[PostResult, int]]] = {}
        attempt = 1
        self._answers(report.results, attempt, answers)
        retries = conf.retry.plan(report.retryable, attempt)
        while retries:
            delay = max(retry.delay for retry in retries)
            attempt += 1
            count = sum(len(retry.urls) for retry in retries)
            self.reporter.retrying(count, delay, attempt, conf.retry.max_attempts)
            time.sleep(delay)
            to_retry: list[PostResult] = []
            for retry in retries:
                again = deliver_now(
                    retry.urls,
                    engines=[retry.engine.endpoint],
                    force=self.force,
                    batch_id=batch_id,
                    conf=conf,
                    client=self._client,
                    normalized=True,
                    attempt=attempt,
                    on_wait=self.reporter.waiting,
                )
                self._answers(again.results, attempt, answers)
                to_retry.extend(again.retryable)
            retries = conf.retry.plan(to_retry, attempt)

        # Per URL, the worst of its engines' last answers.
        finals = _last_answers(answers)
        states: Counter[str] = Counter()
        if len(answers) == 1 and len({state for state, _, _, _ in finals}) == 1:
            # One engine, one kind of answer (a bulk run that went well): every URL it
            # answered for has that state; its host batches hold distinct URLs.
            states[finals[0][0]] = (
                sum(len(last_for) for _, _, _, last_for in finals) if finals else 0
            )
        else:
            outcome: dict[str, str] = {}
            for state, _, _, last_for in sorted(finals, key=lambda final: _RANK[final[0]]):
                outcome.update(dict.fromkeys(last_for, state))
            states.update(outcome.values())
        for _, result, tries, _ in finals:
            if result.outcome is Outcome.REJECTED:
                self.failures.append(result.message)
                self.hint = rejection_hint(result.status, result.host, conf)
            elif result.outcome is Outcome.RETRY:
                self.failures.append(f"{result.message} after {tries} attempt(s)")
                signals.given_up([result], attempt=tries, batch_id=batch_id)
        c = self.counts
        c.skipped += len(report.skipped)
        c.debounced += len(urls) - len(report.skipped) - sum(states.values())
        if fallback:
            c.fallback += len(urls)
        for state, count in states.items():
            setattr(c, state, getattr(c, state) + count)

    def _answers(
        self,
        results: Iterable[PostResult],
        attempt: int,
        answers: dict[str, list[tuple[PostResult, int]]],
    ) -> None:
        for result in results:
            self.reporter.answer(result, attempt)
            answers.setdefault(result.engine.endpoint, []).append((result, attempt))


def _last_answers(
    answers: Mapping[str, list[tuple[PostResult, int]]],
) -> list[tuple[str, PostResult, int, Collection[str]]]:
    """The answers that are an engine's last for some URLs: ``(state, answer, attempt,
    those URLs)``, engine by engine, in the order of the URLs they first answered."""
    finals: list[tuple[str, PostResult, int, Collection[str]]] = []
    for in_order in answers.values():
        if all(attempt == 1 for _, attempt in in_order):
            # No retry: each answer is the only one for its URLs (the host batches of
            # one send hold distinct URLs).
            finals.extend(
                (_state(result), result, 1, result.urls) for result, _ in in_order if result.urls
            )
            continue
        seen: set[str] = set()
        mine: list[tuple[str, PostResult, int, Collection[str]]] = []
        for result, attempt in reversed(in_order):
            last_for = set(result.urls).difference(seen)
            if last_for:
                seen |= last_for
                mine.append((_state(result), result, attempt, last_for))
        if len(mine) > 1:  # retries answered some URLs and not others
            position: dict[str, int] = {}
            for result, _ in in_order:
                for url in result.urls:
                    position.setdefault(url, len(position))
            mine.sort(key=lambda final: min(map(position.__getitem__, final[3])))
        finals.extend(mine)
    return finals


def _state(result: PostResult) -> str:
    return _STATE[result.outcome] if not result.dry_run else "not_sent"


def send_urls(
    urls: Iterable[str],
    *,
    conf: IndexNowSettings,
    response: HttpResponseBase | None = None,
    force: bool = True,
) -> int:
    """Hand checked ``urls`` to delivery as flushes (``force``: ignoring the debounce
    store); return how many. One flush per ``BATCH["MAX_URLS"]`` URLs, so a large
    selection makes several jobs rather than one huge one. With ``response`` (an
    ``HttpResponse``), a synchronous send runs after it has gone out. The admin's
    "Send again" and "Submit URLs" send so."""
    from ..sending.send import chunked
    from ..units.dispatch import dispatch

    seen: dict[str, None] = dict.fromkeys(url for url in urls if url)
    for chunk in chunked(seen, conf.max_urls):
        dispatch(chunk, force=force, response=response)
    return len(seen)
