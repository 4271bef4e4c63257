"""``manage.py indexnow_report [--days 7] [--json]``: how fresh the site is in the engines'
eyes, per registered model (see :mod:`indexnow_django.ops.report`)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...conf import get_settings
from ...crawl.report import CrawlFigures
from ...exceptions import IndexNowConfigError
from ...ops.report import OTHER, Freshness, freshness, percentile


class Command(BaseCommand):
    help = (
        "Per registered model, over the last days: URLs flushed, accepted by every engine, "
        "seconds from flush to acceptance (p50, p95), not accepted yet with their last "
        "answer, skipped by the preflight; with CRAWL['ENABLED'], per engine, the URLs a "
        "verified crawler fetched after acceptance. Reads the history; sends nothing."
    )

    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days", type=int, default=7, help="The period, in days back from now (default 7)."
        )
        parser.add_argument(
            "--json", action="store_true", help="Print the report as one JSON object."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["days"]
        if days < 1:
            raise CommandError(f"--days must be 1 or more, not {days}.")
        try:
            conf = get_settings()
        except IndexNowConfigError as exc:
            raise CommandError(f"INDEXNOW settings are invalid: {exc}") from exc
        if not conf.history_enabled:
            raise CommandError(
                "INDEXNOW['HISTORY']['ENABLED'] is False: no POST is recorded, so there is "
                "nothing to report."
            )
        report = freshness(days, conf=conf)
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
            return
        self._print(report)

    def _print(self, report: Freshness) -> None:
        write = self.stdout.write
        write(
            f"IndexNow freshness over the last {report.days} day(s), since "
            f"{report.since:%Y-%m-%d %H:%M} UTC"
        )
        if not report.models:
            write("  No URL was flushed in the period (or the history holds none).")
            return
        for model in report.models:
            label = model.label if model.label != OTHER else f"{OTHER} (no current object's)"
            p50 = f"{model.p50:.1f}s" if model.p50 is not None else "-"
            p95 = f"{model.p95:.1f}s" if model.p95 is not None else "-"
            write(
                f"{label}: {model.flushed} flushed, {model.accepted} accepted by every "
                f"engine (p50 {p50}, p95 {p95} after the flush), {model.not_accepted_count} "
                f"not accepted yet, {model.skipped_count} skipped by the preflight"
            )
            for waiting in model.not_accepted:
                write(f"  not accepted: {waiting.url} ({waiting.describe()})")
            if model.not_accepted_count > len(model.not_accepted):
                write(f"  ... and {model.not_accepted_count - len(model.not_accepted)} more")
            for figures in (model.crawled or {}).values():
                write(self._crawled(figures))
            for url, reason in model.skipped:
                write(f"  skipped: {url} ({reason})")
            if model.skipped_count > len(model.skipped):
                write(f"  ... and {model.skipped_count - len(model.skipped)} more")

    def _crawled(self, figures: CrawlFigures) -> str:
        shown = figures.as_dict(percentile)
        p50 = f"{shown['p50_seconds']:.0f}s" if shown["p50_seconds"] is not None else "-"
        p95 = f"{shown['p95_seconds']:.0f}s" if shown["p95_seconds"] is not None else "-"
        crawlers = ", ".join(f"{name} {count}" for name, count in sorted(figures.crawlers.items()))
        return (
            f"  crawled after acceptance by {figures.engine}: {figures.fetched} of "
            f"{figures.accepted} URL(s) fetched (p50 {p50}, p95 {p95} after acceptance"
            f"{'; ' + crawlers if crawlers else ''}), {figures.not_fetched} not fetched"
        )
