from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any, NamedTuple
from urllib.parse import urlsplit

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import DateTimeField
from django.utils.module_loading import import_string

from indexnow_django.client import IndexNowClient, Outcome, PostResult
from indexnow_django.conf import get_settings
from indexnow_django.exceptions import IndexNowConfigError
from indexnow_django.normalize import InvalidURL, normalize_url

#: Rows fetched per database round trip with ``--model``.
MODEL_CHUNK_SIZE = 2000
#: Invalid entries listed one by one (at verbosity 1); the summary counts them all.
MAX_INVALID_SHOWN = 100
#: Seconds between two updates of the progress line.
PROGRESS_INTERVAL = 0.25


class Entry(NamedTuple):
    """One URL as read, and where it was read (for error messages)."""

    raw: str
    #: A ``str.format`` template with one ``{}`` for :attr:`position`.
    origin: str
    position: object

    @property
    def where(self) -> str:
        return self.origin.format(self.position)


@dataclass
class Counts:
    read: int = 0
    valid: int = 0
    invalid: int = 0
    duplicates: int = 0
    debounced: int = 0
    sent: int = 0
    failed: int = 0
    batches: int = 0


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
        parser.add_argument("urls", nargs="*", metavar="URL", help="URLs or paths to submit.")
        parser.add_argument(
            "--file",
            dest="files",
            action="append",
            default=[],
            metavar="PATH",
            help="Read URLs from a file, one a line ('-' reads stdin); blank lines and lines "
            "starting with # are skipped. May be repeated.",
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
        self.sync = options["sync"] or conf.resolved_dispatch == "sync"
        self.counts = Counts()
        self.failures: list[str] = []
        self.hint = "Run manage.py indexnow_check."
        self.jobs = 0
        self.tty = self.stdout.isatty()
        self._progress_shown = False
        self._last_progress = 0.0
        self.client: IndexNowClient | None = None
        if self.sync and not self.dry_run:
            from indexnow_django.submitter import make_client

            self.client = make_client(conf)
        if not self.sync and not self.dry_run:
            self._check_queue()

        entries = self._entries(options)
        try:
            self._run(entries)
        finally:
            self._clear_progress()
        self._summary()
        if self.counts.valid == 0:
            raise CommandError(f"No valid URL to submit ({self.counts.invalid} invalid).")
        if self.failures:
            shown = "; ".join(self.failures[:5])
            more = f" and {len(self.failures) - 5} more" if len(self.failures) > 5 else ""
            raise CommandError(
                f"{self.counts.failed} URL(s) were not accepted: {shown}{more}. {self.hint}"
            )

    def _check_queue(self) -> None:
        """Fall back to sending now when the queue's Redis cannot take jobs."""
        from redis.exceptions import RedisError

        from indexnow_django.diagnostics import quick_redis_connection

        conn = quick_redis_connection(self.conf.queue_name)
        try:
            conn.ping()
        except RedisError as exc:
            self.stderr.write(
                self.style.WARNING(
                    f"The Redis of queue {self.conf.queue_name!r} is unreachable ({exc}): "
                    "sending now from this process instead."
                )
            )
            from indexnow_django.submitter import make_client

            self.sync = True
            self.client = make_client(self.conf)
        finally:
            conn.connection_pool.disconnect()

    # ------------------------------------------------------------------ input

    def _entries(self, options: Mapping[str, Any]) -> Iterator[Entry]:
        for number, url in enumerate(options["urls"], 1):
            yield Entry(url, "argument {}", number)
        for path in options["files"]:
            yield from self._file_entries(path, options.get("stdin") or sys.stdin)
        for label in options["models"]:
            yield from self._model_entries(label)
        for dotted in options["sitemaps"]:
            yield from self._sitemap_entries(dotted)

    def _file_entries(self, path: str, stdin: IO[str]) -> Iterator[Entry]:
        if path == "-":
            yield from self._lines(stdin, "stdin line {}")
            return
        try:
            handle = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror or exc}") from exc
        with handle:
            yield from self._lines(handle, path.replace("{", "{{").replace("}", "}}") + " line {}")

    @staticmethod
    def _lines(handle: Iterable[str], origin: str) -> Iterator[Entry]:
        for number, line in enumerate(handle, 1):
            line = line.strip()
            if line and not line.startswith("#"):
                yield Entry(line, origin, number)

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
                    yield Entry(str(url), origin, obj.pk)

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
                    yield Entry(info["location"], origin, page)
                    for alternate in info.get("alternates") or ():
                        yield Entry(alternate["location"], origin, page)

    # ------------------------------------------------------------------ batching

    def _run(self, entries: Iterator[Entry]) -> None:
        conf = self.conf
        base_url = conf.base_url
        hosts = conf.hosts
        max_urls = conf.max_urls
        counts = self.counts
        buffers: dict[str, dict[str, None]] = {}
        for entry in entries:
            counts.read += 1
            try:
                url = normalize_url(entry.raw, base_url)
            except InvalidURL as exc:
                self._invalid(entry, str(exc))
                continue
            # A normalized URL is always scheme://host/path: its host is the third part.
            host = url.split("/", 3)[2]
            if host not in hosts:
                self._invalid(entry, f"host {host!r} is not in INDEXNOW['HOSTS']")
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

    def _invalid(self, entry: Entry, reason: str) -> None:
        self.counts.invalid += 1
        if self.verbosity >= 2 or (
            self.verbosity == 1 and self.counts.invalid <= MAX_INVALID_SHOWN
        ):
            self._write_err(f"{entry.where}: skipped {entry.raw!r}: {reason}")
        elif self.verbosity == 1 and self.counts.invalid == MAX_INVALID_SHOWN + 1:
            self._write_err("(more invalid entries are not listed; --verbosity 2 lists them all)")

    def _send(self, host: str, urls: list[str]) -> None:
        self.counts.batches += 1
        if self.dry_run:
            self._dry_run(host, urls)
        elif self.sync:
            self._send_now(host, urls)
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
            wanted.update(store.filter_new(engine.name, urls))
        return [url for url in urls if url in wanted]

    def _dry_run(self, host: str, urls: list[str]) -> None:
        fresh = self._not_debounced(urls)
        self.counts.debounced += len(urls) - len(fresh)
        self.counts.sent += len(fresh)
        engines = ", ".join(e.name for e in self.conf.engines)
        self._write(
            f"Would send batch {self.counts.batches}: {len(fresh)} URL(s) for {host} to {engines}"
            + (f" ({len(urls) - len(fresh)} debounced)" if len(fresh) != len(urls) else "")
        )
        if self.verbosity >= 1:
            for url in fresh:
                self._write(f"  {url}")

    def _enqueue(self, host: str, urls: list[str]) -> None:
        from indexnow_django.dispatch import dispatch

        fresh = self._not_debounced(urls)
        self.counts.debounced += len(urls) - len(fresh)
        if not fresh:
            return
        dispatch(fresh, force=self.force)
        self.jobs += 1
        self.counts.sent += len(fresh)
        if self.verbosity >= 2:
            self._write(f"Queued batch {self.counts.batches}: {len(fresh)} URL(s) for {host}")

    def _send_now(self, host: str, urls: list[str]) -> None:
        from indexnow_django.dispatch import rejection_hint
        from indexnow_django.submitter import deliver_now

        conf = self.conf
        batch_id = uuid.uuid4().hex[:12]
        report = deliver_now(
            urls, force=self.force, batch_id=batch_id, conf=conf, client=self.client
        )
        final: list[PostResult] = []
        pending: list[PostResult] = []
        for result in report.results:
            (pending if result.outcome is Outcome.RETRY else final).append(result)
            self._answer(result)
        attempt = 1
        while pending and attempt < conf.retry.max_attempts:
            delay = max(conf.retry.delay(r.status, attempt, r.retry_after) for r in pending)
            attempt += 1
            self._write(
                f"Retrying {sum(len(r.urls) for r in pending)} URL(s) in {delay:g}s "
                f"(attempt {attempt} of {conf.retry.max_attempts})"
            )
            time.sleep(delay)
            retried: list[PostResult] = []
            for result in pending:
                again = deliver_now(
                    result.urls,
                    engines=[result.engine.name],
                    force=self.force,
                    batch_id=batch_id,
                    conf=conf,
                    client=self.client,
                )
                for new in again.results:
                    (retried if new.outcome is Outcome.RETRY else final).append(new)
                    self._answer(new)
            pending = retried
        final.extend(pending)

        posted: set[str] = set()
        failed: set[str] = set()
        for result in final:
            posted.update(result.urls)
            if result.outcome is not Outcome.ACCEPTED:
                failed.update(result.urls)
                if result.outcome is Outcome.RETRY:
                    self.failures.append(f"{result.message} after {attempt} attempts")
                else:
                    self.failures.append(result.message)
                    self.hint = rejection_hint(result.status, result.host, conf)
        self.counts.debounced += len(urls) - len(posted)
        self.counts.failed += len(failed)
        self.counts.sent += len(posted) - len(failed)

    def _answer(self, result: PostResult) -> None:
        if self.verbosity < 1:
            return
        status = result.status if result.status is not None else "-"
        line = (
            f"{result.host} → {result.engine.name}: {len(result.urls)} URL(s) "
            f"{result.outcome.value} ({status})"
        )
        if result.outcome is Outcome.ACCEPTED:
            self._write(
                self.style.SUCCESS(line)
                if result.status is not None
                else f"{line}: {result.message}"
            )
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
        done = "would send" if self.dry_run else "sent" if self.sync else "queued"
        self.stdout.write(
            f"\r\033[K{c.read:,} read, {c.valid:,} valid, {c.invalid:,} invalid, "
            f"{c.sent:,} {done}, {c.failed:,} failed",
            ending="",
        )
        self.stdout.flush()
        self._progress_shown = True

    def _clear_progress(self) -> None:
        if self._progress_shown:
            self.stdout.write("\r\033[K", ending="")
            self._progress_shown = False

    def _summary(self) -> None:
        c = self.counts
        if self.dry_run:
            done = f"{c.sent} would be sent"
        elif self.sync:
            done = f"{c.sent} sent"
        else:
            done = f"{c.sent} queued in {self.jobs} job(s)"
        line = (
            f"{c.read} read, {c.valid} valid, {c.invalid} invalid, {c.duplicates} duplicate(s), "
            f"{c.debounced} debounced, {done}, {c.failed} failed."
        )
        if self.verbosity >= 1 or c.failed or c.valid == 0:
            style = self.style.ERROR if c.failed else self.style.SUCCESS
            self.stdout.write(style(line))
