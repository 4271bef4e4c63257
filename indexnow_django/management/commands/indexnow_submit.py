"""``manage.py indexnow_submit``: submit URLs typed, listed in files, or taken from models
and sitemaps.

The command parses its options, opens its inputs (files and stdin through
:mod:`indexnow_django.manual.entries`, models and sitemaps through
:mod:`indexnow_django.manual.sources`), hands the entries to a
:class:`~indexnow_django.manual.runs.SubmissionRun` (checking, batching, sending,
counting) and prints what the run reports: skipped entries, each engine's
answer, a progress line on a terminal, the summary.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Iterator, Mapping
from typing import IO, Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from indexnow_django.conf import get_settings
from indexnow_django.exceptions import IndexNowConfigError
from indexnow_django.manual.entries import Entry, NotText, Ready, read_lines
from indexnow_django.manual.runs import Counts, Reporter, SubmissionRun
from indexnow_django.manual.sources import (
    ChangedSince,
    SourceError,
    model_entries,
    parse_changed_since,
    sitemap_entries,
)
from indexnow_django.protocol.client import Engine, Outcome, PostResult, excerpt
from indexnow_django.protocol.masking import mask_url
from indexnow_django.transports import chosen

#: Invalid entries listed one by one (at verbosity 1); the summary counts them all.
MAX_INVALID_SHOWN = 100
#: Seconds between two updates of the progress line.
PROGRESS_INTERVAL = 0.25
#: How much of a skipped entry a message quotes.
ECHO_CHARS = 80


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
            "--pk",
            dest="pks",
            action="append",
            default=None,
            metavar="PK",
            help="With one --model: submit the object with this primary key only (if it is "
            "public). May be repeated.",
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
            "--changed-since",
            metavar="WHEN",
            help="With --sitemap: only locations whose lastmod is newer than WHEN: a duration "
            "(30m, 12h, 1d, 2w), a date (2026-12-01), a date and time, or last-accepted (newer "
            "than the last time every engine accepted them, or never accepted).",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="Print the counts and each engine's answers as one JSON object instead of "
            "text; the exit code is the same.",
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
        self.json: bool = options["json"]
        self.tty = self.stdout.isatty() and not self.json
        self._progress_shown = False
        self._last_progress = 0.0
        self.changed = self._changed_since(options)
        reporter: Reporter = _Collector(self) if self.json else _Printer(self)
        self.run = SubmissionRun(
            conf,
            force=options["force"],
            dry_run=options["dry_run"],
            sync=options["sync"] or chosen(conf).in_process,
            reporter=reporter,
            live=self.tty,
        )
        self.counts = self.run.counts

        try:
            self.run.feed(self._entries(options))
        except SourceError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            self._clear_progress()
        if isinstance(reporter, _Collector):
            self.stdout.write(json.dumps(reporter.document(), indent=2))
        else:
            self._summary()
        if self.counts.valid == 0:
            raise CommandError(f"No valid URL to submit ({self.counts.invalid} invalid).")
        failures = self.run.failures
        if failures:
            c = self.counts
            shown = "; ".join(failures[:5])
            more = f" and {len(failures) - 5} more" if len(failures) > 5 else ""
            raise CommandError(
                f"{c.rejected + c.failed} URL(s) were not accepted ({c.rejected} rejected, "
                f"{c.failed} failed): {shown}{more}. {self.run.hint}"
            )

    # ------------------------------------------------------------------ input

    def _changed_since(self, options: Mapping[str, Any]) -> ChangedSince | None:
        """What ``--changed-since`` keeps (checked before anything is read), and ``--pk``."""
        if options["pks"] is not None and len(options["models"]) != 1:
            raise CommandError("--pk goes with exactly one --model (app_label.Model).")
        value = options["changed_since"]
        if value is None:
            return None
        if not options["sitemaps"]:
            raise CommandError(
                "--changed-since goes with --sitemap: it compares each location's lastmod."
            )
        from django.utils import timezone

        try:
            since = parse_changed_since(value, timezone.now())
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if since is not None:
            return ChangedSince(since=since, base_url=self.conf.base_url)
        if not self.conf.history_enabled:
            raise CommandError(
                "--changed-since last-accepted reads the history, but INDEXNOW['HISTORY']"
                "['ENABLED'] is False: give a duration or a date instead."
            )
        from indexnow_django.sending.history import accepted_by_all

        accepted = accepted_by_all([engine.name for engine in self.conf.engines])
        return ChangedSince(accepted=accepted, base_url=self.conf.base_url)

    def _entries(self, options: Mapping[str, Any]) -> Iterator[Entry | Ready]:
        for number, url in enumerate(options["urls"], 1):
            yield Entry(url, "argument {}", number)
        for path in options["files"]:
            yield from self._file_entries(path, options.get("stdin") or sys.stdin)
        for label in options["models"]:
            yield from model_entries(label, pks=options["pks"])
        for dotted in options["sitemaps"]:
            yield from sitemap_entries(dotted, self.conf.base_url, changed=self.changed)

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

    # ------------------------------------------------------------------ output

    def _invalid(self, entry: Entry, reason: str, count: int) -> None:
        if self.verbosity >= 2 or (self.verbosity == 1 and count <= MAX_INVALID_SHOWN):
            what = f" {excerpt(entry.raw, ECHO_CHARS)!r}" if entry.raw else ""
            self._write_err(f"{entry.where}: skipped{what}: {reason}")
        elif self.verbosity == 1 and count == MAX_INVALID_SHOWN + 1:
            self._write_err("(more invalid entries are not listed; --verbosity 2 lists them all)")

    def _answer(self, result: PostResult, attempt: int = 1) -> None:
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
        run = self.run
        parts: list[str] = []
        if run.dry_run or c.not_sent:
            parts.append(f"{n(c.not_sent)} not sent (dry run)")
        if run.dry_run:
            return ", ".join(parts)
        if not run.sync:
            parts.append(f"{n(c.queued)} queued in {n(c.jobs)} job(s)")
            if c.fallback:
                parts.append(f"{n(c.fallback)} sent by fallback")
        if c.skipped:
            parts.append(f"{n(c.skipped)} skipped by the preflight")
        if run.sync or c.fallback:
            parts.append(f"{n(c.accepted)} accepted")
            parts.append(f"{n(c.rejected)} rejected")
            parts.append(f"{n(c.failed)} failed")
        elif c.failed:
            parts.append(f"{n(c.failed)} failed (run at once by a synchronous queue)")
        return ", ".join(parts)

    def _summary(self) -> None:
        c = self.counts
        unchanged = f"{self.changed.unchanged} unchanged, " if self.changed is not None else ""
        line = (
            f"{unchanged}{c.read} read, {c.valid} valid, {c.invalid} invalid, "
            f"{c.duplicates} duplicate(s), {c.debounced} debounced, {self._done(c)}."
        )
        if self.verbosity >= 1 or self.run.failures or c.valid == 0:
            style = self.style.ERROR if self.run.failures else self.style.SUCCESS
            self.stdout.write(style(line))


class _Printer(Reporter):
    """What the run reports, printed by the command at its verbosity."""

    def __init__(self, command: Command) -> None:
        self.command = command

    def would_send(self, host: str, urls: list[str], debounced: int) -> None:
        engines = ", ".join(e.name for e in self.command.conf.engines)
        self.command._write(
            f"Would send {len(urls)} URL(s) for {host} to {engines}"
            + (f" ({debounced} debounced)" if debounced else "")
        )
        for url in urls:
            self.command._write(f"  {url}")

    def queued(self, host: str, count: int, job_id: str, batch_id: str) -> None:
        if self.command.verbosity >= 2:
            self.command._write(f"Queued {count} URL(s) for {host}: job {job_id}, batch {batch_id}")

    def retrying(self, count: int, delay: float, attempt: int, max_attempts: int) -> None:
        self.command._write(
            f"Retrying {count} URL(s) in {delay:g}s (attempt {attempt} of {max_attempts})"
        )

    def waiting(self, engine: Engine, seconds: float) -> None:
        self.command._write(
            f"Waiting {seconds:.1f}s: {engine.name} takes "
            f"{self.command.conf.throttle_per_minute} POSTs a minute "
            "(INDEXNOW['THROTTLE']['MAX_REQUESTS_PER_MINUTE'])"
        )

    def warning(self, text: str) -> None:
        self.command._write_err(self.command.style.WARNING(text))

    def invalid(self, entry: Entry, reason: str, count: int) -> None:
        self.command._invalid(entry, reason, count)

    def answer(self, result: PostResult, attempt: int) -> None:
        self.command._answer(result, attempt)

    def progress(self, force: bool = False) -> None:
        self.command._progress(force)


class _Collector(Reporter):
    """What the run reports, kept for ``--json``."""

    def __init__(self, command: Command) -> None:
        self.command = command
        self.engines: dict[str, dict[str, Any]] = {
            engine.name: {"endpoint": mask_url(engine.endpoint), "posts": 0, "answers": []}
            for engine in command.conf.engines
        }
        self.jobs: list[dict[str, Any]] = []
        self.would: list[dict[str, Any]] = []
        self.skipped: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.waited = 0.0

    def waiting(self, engine: Engine, seconds: float) -> None:
        self.waited += seconds

    def would_send(self, host: str, urls: list[str], debounced: int) -> None:
        self.would.append({"host": host, "count": len(urls), "debounced": debounced, "urls": urls})

    def queued(self, host: str, count: int, job_id: str, batch_id: str) -> None:
        self.jobs.append({"id": job_id, "batch_id": batch_id, "host": host, "count": count})

    def warning(self, text: str) -> None:
        self.warnings.append(text)
        self.command._write_err(self.command.style.WARNING(text))

    def invalid(self, entry: Entry, reason: str, count: int) -> None:
        verbosity = self.command.verbosity
        if verbosity >= 2 or (verbosity == 1 and count <= MAX_INVALID_SHOWN):
            self.skipped.append({"where": entry.where, "entry": entry.raw, "reason": reason})

    def answer(self, result: PostResult, attempt: int) -> None:
        engine = self.engines.setdefault(
            result.engine.name,
            {"endpoint": mask_url(result.engine.endpoint), "posts": 0, "answers": []},
        )
        engine["posts"] += 1
        engine["answers"].append(
            {
                "host": result.host,
                "count": len(result.urls),
                "outcome": "dry_run" if result.dry_run else result.outcome.value,
                "status": result.status,
                "attempt": attempt,
                "duration": round(result.elapsed, 4),
                "message": result.message,
            }
        )

    def document(self) -> dict[str, Any]:
        command, run = self.command, self.command.run
        counts = dataclasses.asdict(run.counts)
        if command.changed is not None:
            counts["unchanged"] = command.changed.unchanged
        mode = "dry_run" if run.dry_run else "sync" if run.sync else "queue"
        document: dict[str, Any] = {"mode": mode, "counts": counts, "engines": self.engines}
        if mode == "queue":
            document["jobs"] = self.jobs
        if mode == "dry_run":
            document["would_send"] = self.would
        document["throttle_waited"] = round(self.waited, 3)
        document["skipped"] = self.skipped
        document["warnings"] = self.warnings
        document["failures"] = run.failures
        document["ok"] = not run.failures and run.counts.valid > 0
        if run.failures:
            document["hint"] = run.hint
        return document
