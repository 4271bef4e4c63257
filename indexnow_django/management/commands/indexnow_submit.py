"""``manage.py indexnow_submit``: submit URLs typed, listed in files, or taken from models
and sitemaps.

The command reads and checks its input, groups it into batches per host and
prints what became of each; the sending is the package's own: a job per batch
on the queue (:mod:`indexnow_django.queue`), or :func:`~indexnow_django.
submitter.deliver_now` in this process (``--sync``, or when the queue cannot
take a job), retried after the delays :meth:`~indexnow_django.client.
RetryPolicy.plan` gives.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import urlsplit

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import DateTimeField
from django.utils.module_loading import import_string

from indexnow_django.client import IndexNowClient, Outcome, PostResult, excerpt
from indexnow_django.conf import get_settings
from indexnow_django.entries import Entry, NotText, Ready, read_lines
from indexnow_django.exceptions import IndexNowConfigError
from indexnow_django.normalize import (
    InvalidURL,
    foreign_host_reason,
    host_of,
    normalize_entry,
    normalize_url,
)

#: Rows fetched per database round trip with ``--model``.
MODEL_CHUNK_SIZE = 2000
#: Invalid entries listed one by one (at verbosity 1); the summary counts them all.
MAX_INVALID_SHOWN = 100
#: Seconds between two updates of the progress line.
PROGRESS_INTERVAL = 0.25
#: How much of a skipped entry a message quotes.
ECHO_CHARS = 80

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


@dataclass
class _SiteDomain:
    """What ``Sitemap.get_urls`` needs of a site: its domain (from ``BASE_URL``)."""

    domain: str
    name: str = ""


class Command(BaseCommand):
    help = (
        "Submit URLs to IndexNow: given as arguments, read from a file (or stdin with --file -), "
        "taken from the public objects of a registered model, or from a sitemaps dict. Large "
        "inputs are streamed in batches of INDEXNOW['BATCH']['MAX_URLS']."
    )

    stealth_options = ("stdin",)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "urls",
            nargs="*",
            metavar="URL",
            help="Absolute URLs, or paths starting with / (joined to BASE_URL).",
        )
        parser.add_argument(
            "--file",
            dest="files",
            action="append",
            default=[],
            metavar="PATH",
            help="Read URLs from a UTF-8 file, one a line ('-' reads stdin); blank lines and "
            "lines starting with # are skipped. May be repeated.",
        )
        parser.add_argument(
            "--model",
            dest="models",
            action="append",
            default=[],
            metavar="app_label.Model",
            help="Submit the URLs of every public object of a registered model. May be repeated.",
        )
        parser.add_argument(
            "--sitemap",
            dest="sitemaps",
            action="append",
            default=[],
            metavar="dotted.path",
            help="Submit every location of a sitemaps dict (as given to Django's sitemap view), "
            "e.g. mysite.sitemaps.sitemaps. May be repeated.",
        )
        parser.add_argument(
            "--sync",
            action="store_true",
            help="Send now from this process and print each engine's answer, instead of queueing "
            "jobs.",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Print what would be sent; send and queue nothing.",
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="Send URLs even when an engine accepted them within DEBOUNCE['TTL'].",
        )

    # ------------------------------------------------------------------ entry point

    def handle(self, *args: Any, **options: Any) -> None:
        if not (options["urls"] or options["files"] or options["models"] or options["sitemaps"]):
            raise CommandError("Nothing to submit: give URLs, --file, --model or --sitemap.")
        try:
            conf = get_settings()
        except IndexNowConfigError as exc:
            raise CommandError(str(exc)) from exc
        if not conf.enabled:
            self.stderr.write(
                self.style.WARNING("INDEXNOW['ENABLED'] is False: nothing is submitted.")
            )
            return
        self.conf = conf
        self.verbosity: int = options["verbosity"]
        self.force: bool = options["force"]
        self.dry_run: bool = options["dry_run"]
        self.sync: bool = options["sync"] or conf.resolved_dispatch == "sync"
        #: Set once the queue failed to take a job: the rest is sent from here.
        self.queue_down = False
        self.counts = Counts()
        self.failures: list[str] = []
        self.hint = "Run manage.py indexnow_check."
        self.tty = self.stdout.isatty()
        self._progress_shown = False
        self._last_progress = 0.0
        self._client: IndexNowClient | None = None

        entries = self._entries(options)
        try:
            self._run(entries)
        finally:
            self._clear_progress()
        self._summary()
        if self.counts.valid == 0:
            raise CommandError(f"No valid URL to submit ({self.counts.invalid} invalid).")
        if self.failures:
            c = self.counts
            shown = "; ".join(self.failures[:5])
            more = f" and {len(self.failures) - 5} more" if len(self.failures) > 5 else ""
            raise CommandError(
                f"{c.rejected + c.failed} URL(s) were not accepted ({c.rejected} rejected, "
                f"{c.failed} failed): {shown}{more}. {self.hint}"
            )

    # ------------------------------------------------------------------ input

    def _entries(self, options: Mapping[str, Any]) -> Iterator[Entry | Ready]:
        for number, url in enumerate(options["urls"], 1):
            yield Entry(url, "argument {}", number)
        for path in options["files"]:
            yield from self._file_entries(path, options.get("stdin") or sys.stdin)
        for label in options["models"]:
            yield from self._model_entries(label)
        for dotted in options["sitemaps"]:
            yield from self._sitemap_entries(dotted)

    def _file_entries(self, path: str, stdin: IO[str]) -> Iterator[Entry | Ready]:
        if path == "-":
            yield from self._read(getattr(stdin, "buffer", stdin), "stdin", "stdin line {}")
            return
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror or exc}") from exc
        with handle:
            origin = path.replace("{", "{{").replace("}", "}}") + " line {}"
            yield from self._read(handle, path, origin)

    def _read(self, stream: IO[Any], name: str, origin: str) -> Iterator[Entry | Ready]:
        try:
            yield from read_lines(stream, origin, self.conf.hosts)
        except NotText as exc:
            raise CommandError(
                f"{name} is not a text file ({exc}): nothing was submitted from it. "
                "Give one URL a line, in UTF-8."
            ) from exc

    def _model_entries(self, label: str) -> Iterator[Entry]:
        from django.utils import timezone

        from indexnow_django import tracking

        try:
            model = apps.get_model(label)
        except (LookupError, ValueError) as exc:
            raise CommandError(f"--model {label}: no such model ({exc}).") from exc
        options = tracking.get_registration(model)
        if options is None:
            raise CommandError(
                f"--model {label}: {model._meta.label} is not registered with IndexNow "
                "(register it in <app>/indexnow.py)."
            )
        now = timezone.now()
        queryset = model._default_manager.all()
        if options.publish_at:
            # Objects to be published later are not public yet: the database
            # leaves them out, the registration decides about the rest.
            field = model._meta.get_field(options.publish_at)
            limit = now if isinstance(field, DateTimeField) else timezone.localdate(now)
            queryset = queryset.exclude(**{f"{options.publish_at}__gt": limit})
        origin = f"{model._meta.label} pk={{}}"
        for obj in queryset.order_by("pk").iterator(chunk_size=MODEL_CHUNK_SIZE):
            if options.is_public(obj, now):
                for url in options.urls(obj):
                    yield Entry(str(url), origin, obj.pk, typed=False)

    def _sitemap_entries(self, dotted: str) -> Iterator[Entry]:
        from django.contrib.sitemaps import Sitemap

        try:
            found = import_string(dotted)
        except ImportError as exc:
            raise CommandError(f"--sitemap {dotted}: cannot import it ({exc}).") from exc
        if isinstance(found, Sitemap) or (isinstance(found, type) and issubclass(found, Sitemap)):
            found = {"": found}
        if not isinstance(found, Mapping):
            raise CommandError(
                f"--sitemap {dotted}: expected a dict of sitemaps (as given to "
                f"django.contrib.sitemaps.views.sitemap), got {type(found).__name__}."
            )
        base = urlsplit(self.conf.base_url)
        site = _SiteDomain(base.netloc)
        for name, sitemap in found.items():
            if isinstance(sitemap, type):
                sitemap = sitemap()
            label = f"sitemap {name!r}" if name else f"sitemap {dotted}"
            for page in sitemap.paginator.page_range:
                origin = f"{label} page {{}}"
                for info in sitemap.get_urls(page=page, site=site, protocol=base.scheme):
                    yield Entry(info["location"], origin, page, typed=False)
                    for alternate in info.get("alternates") or ():
                        yield Entry(alternate["location"], origin, page, typed=False)

    # ------------------------------------------------------------------ batching

    def _run(self, entries: Iterator[Entry | Ready]) -> None:
        conf = self.conf
        base_url = conf.base_url
        hosts = conf.hosts
        max_urls = conf.max_urls
        counts = self.counts
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
            elif self.tty:
                self._progress()
        for host, buffer in buffers.items():
            self._send(host, list(buffer))

    def _take(self, buffers: dict[str, dict[str, None]], host: str, urls: list[str]) -> None:
        """What :meth:`_run` does URL by URL, for valid ``urls`` of ``host``, a slice at a time."""
        counts = self.counts
        counts.read += len(urls)
        counts.valid += len(urls)
        max_urls = self.conf.max_urls
        start = 0
        while start < len(urls):
            buffer = buffers.setdefault(host, {})
            # At most the URLs that fill the buffer: it is sent once full, as in _run.
            taken = urls[start : start + max_urls - len(buffer)]
            start += len(taken)
            before = len(buffer)
            buffer.update(dict.fromkeys(taken))
            counts.duplicates += len(taken) - (len(buffer) - before)
            if len(buffer) >= max_urls:
                del buffers[host]
                self._send(host, list(buffer))
        if self.tty:
            self._progress()

    def _invalid(self, entry: Entry, reason: str) -> None:
        self.counts.invalid += 1
        if self.verbosity >= 2 or (
            self.verbosity == 1 and self.counts.invalid <= MAX_INVALID_SHOWN
        ):
            what = f" {excerpt(entry.raw, ECHO_CHARS)!r}" if entry.raw else ""
            self._write_err(f"{entry.where}: skipped{what}: {reason}")
        elif self.verbosity == 1 and self.counts.invalid == MAX_INVALID_SHOWN + 1:
            self._write_err("(more invalid entries are not listed; --verbosity 2 lists them all)")

    def _send(self, host: str, urls: list[str]) -> None:
        if self.dry_run:
            self._dry_run(host, urls)
        elif self.sync:
            self._send_now(urls)
        else:
            self._enqueue(host, urls)
        self._progress(force=True)

    def _not_debounced(self, urls: list[str]) -> list[str]:
        """``urls`` less those every engine accepted within the TTL (read-only look-up)."""
        if self.force:
            return urls
        from indexnow_django.submitter import make_debounce

        store = make_debounce(self.conf)
        if not store.enabled:
            return urls
        wanted: set[str] = set()
        for engine in self.conf.engines:
            wanted.update(store.filter_new(engine, urls))
        return [url for url in urls if url in wanted]

    def _dry_run(self, host: str, urls: list[str]) -> None:
        fresh = self._not_debounced(urls)
        self.counts.debounced += len(urls) - len(fresh)
        self.counts.not_sent += len(fresh)
        engines = ", ".join(e.name for e in self.conf.engines)
        self._write(
            f"Would send {len(fresh)} URL(s) for {host} to {engines}"
            + (f" ({len(urls) - len(fresh)} debounced)" if len(fresh) != len(urls) else "")
        )
        if self.verbosity >= 1:
            for url in fresh:
                self._write(f"  {url}")

    def _enqueue(self, host: str, urls: list[str]) -> None:
        from indexnow_django.queue import enqueue_delivery, get_queue, new_batch_id

        fresh = self._not_debounced(urls)
        self.counts.debounced += len(urls) - len(fresh)
        if not fresh:
            return
        batch_id = new_batch_id()
        if self.queue_down:
            self._send_now(fresh, batch_id=batch_id, fallback=True)
            return
        try:
            queue = get_queue(self.conf)
            job = enqueue_delivery(
                queue,
                fresh,
                batch_id=batch_id,
                force=self.force,
                delay=self.conf.queue_delay,
                conf=self.conf,
            )
        except Exception as exc:  # Redis down, full, read-only: the URLs go out from here
            self.queue_down = True
            self._write_err(
                self.style.WARNING(
                    f"The queue {self.conf.queue_name!r} cannot take jobs ({type(exc).__name__}: "
                    f"{excerpt(str(exc), 200)}): sending from this process instead."
                )
            )
            self._send_now(fresh, batch_id=batch_id, fallback=True)
            return
        self.counts.jobs += 1
        self.counts.queued += len(fresh)
        if not queue.is_async and job.is_failed:
            # A synchronous queue (ASYNC: False) ran the job here and then: its failure
            # is this command's to tell.
            self.counts.failed += len(fresh)
            result = job.latest_result()
            lines = str(result.exc_string if result is not None else "").strip().splitlines()
            self.failures.append(f"job {job.id} failed: {excerpt(lines[-1] if lines else '-')}")
        if self.verbosity >= 2:
            self._write(f"Queued {len(fresh)} URL(s) for {host}: job {job.id}, batch {batch_id}")

    # ------------------------------------------------------------------ sending from here

    def _send_now(self, urls: list[str], *, batch_id: str = "", fallback: bool = False) -> None:
        """Send ``urls`` from this process, retrying what the engines ask to be retried."""
        from indexnow_django.jobs import rejection_hint
        from indexnow_django.queue import new_batch_id
        from indexnow_django.submitter import deliver_now, make_client

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
            self._write(
                f"Retrying {count} URL(s) in {delay:g}s "
                f"(attempt {attempt} of {conf.retry.max_attempts})"
            )
            time.sleep(delay)
            pending: list[PostResult] = []
            for retry in retries:
                again = deliver_now(
                    retry.urls,
                    engines=[retry.engine.endpoint],
                    force=self.force,
                    batch_id=batch_id,
                    conf=conf,
                    client=self._client,
                    normalized=True,
                )
                self._answers(again.results, attempt, answers)
                pending.extend(again.retryable)
            retries = conf.retry.plan(pending, attempt)

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
        c = self.counts
        c.debounced += len(urls) - sum(states.values())
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
            self._answer(result)
            answers.setdefault(result.engine.endpoint, []).append((result, attempt))

    def _answer(self, result: PostResult) -> None:
        if self.verbosity < 1:
            return
        line = f"{result.host} → {result.engine.name}: {len(result.urls)} URL(s)"
        if result.dry_run:
            self._write(f"{line} not sent (dry run)")
            return
        status = result.status if result.status is not None else result.error or "-"
        line = f"{line} {result.outcome.value} ({status})"
        if result.outcome is Outcome.ACCEPTED:
            self._write(self.style.SUCCESS(line))
        elif result.outcome is Outcome.RETRY:
            self._write(self.style.WARNING(f"{line}: {result.message}"))
        else:
            self._write(self.style.ERROR(f"{line}: {result.message}"))

    # ------------------------------------------------------------------ output

    def _write(self, text: str) -> None:
        if self.verbosity >= 1:
            self._clear_progress()
            self.stdout.write(text)

    def _write_err(self, text: str) -> None:
        self._clear_progress()
        self.stderr.write(text)

    def _progress(self, force: bool = False) -> None:
        if not self.tty or self.verbosity < 1:
            return
        now = time.monotonic()
        if not force and now - self._last_progress < PROGRESS_INTERVAL:
            return
        self._last_progress = now
        c = self.counts
        self.stdout.write(
            f"\r\033[K{c.read:,} read, {c.valid:,} valid, {c.invalid:,} invalid, "
            f"{self._done(c, '{:,}')}",
            ending="",
        )
        self.stdout.flush()
        self._progress_shown = True

    def _clear_progress(self) -> None:
        if self._progress_shown:
            self.stdout.write("\r\033[K", ending="")
            self._progress_shown = False

    def _done(self, c: Counts, number: str = "{}") -> str:
        """What became of the valid URLs, in the terms of the mode."""
        n = number.format
        parts: list[str] = []
        if self.dry_run or c.not_sent:
            parts.append(f"{n(c.not_sent)} not sent (dry run)")
        if self.dry_run:
            return ", ".join(parts)
        if not self.sync:
            parts.append(f"{n(c.queued)} queued in {n(c.jobs)} job(s)")
            if c.fallback:
                parts.append(f"{n(c.fallback)} sent by fallback")
        if self.sync or c.fallback:
            parts.append(f"{n(c.accepted)} accepted")
            parts.append(f"{n(c.rejected)} rejected")
            parts.append(f"{n(c.failed)} failed")
        elif c.failed:
            parts.append(f"{n(c.failed)} failed (run at once by a synchronous queue)")
        return ", ".join(parts)

    def _summary(self) -> None:
        c = self.counts
        line = (
            f"{c.read} read, {c.valid} valid, {c.invalid} invalid, {c.duplicates} duplicate(s), "
            f"{c.debounced} debounced, {self._done(c)}."
        )
        if self.verbosity >= 1 or self.failures or c.valid == 0:
            style = self.style.ERROR if self.failures else self.style.SUCCESS
            self.stdout.write(style(line))


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
