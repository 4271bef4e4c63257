"""``manage.py indexnow_check``: print what :mod:`indexnow_django.ops.diagnostics` finds."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from indexnow_django.ops.diagnostics import SECTIONS, Diagnosis, Finding, Status, diagnose


class Command(BaseCommand):
    help = (
        "Check that IndexNow submissions can be delivered: settings, dispatch, queue and Redis, "
        "workers and scheduler, engines, hosts and their key files, the debounce cache, the "
        "registered models and the jobs. Exits non-zero when delivery cannot work."
    )

    # Broken settings are reported here, with the rest, instead of stopping the command.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--offline",
            action="store_true",
            help="Do not fetch the key files.",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="Print the findings as JSON (for monitoring); the exit code is the same.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        diagnosis = diagnose(offline=options["offline"])
        if options["json"]:
            self.stdout.write(json.dumps(diagnosis.as_dict(), indent=2))
        else:
            self._print(diagnosis)
        if not diagnosis.ok:
            reasons = "; ".join(f.message for f in diagnosis.failures)
            raise CommandError(f"IndexNow delivery cannot work: {reasons}")

    def _label(self, finding: Finding) -> str:
        label = f"{finding.status.value:<4}"
        if finding.status is Status.FAIL:
            return self.style.ERROR(label)
        if finding.status is Status.WARN:
            return self.style.WARNING(label)
        return self.style.SUCCESS(label)

    def _print(self, diagnosis: Diagnosis) -> None:
        for section, findings in diagnosis.by_section().items():
            self.stdout.write(self.style.MIGRATE_HEADING(SECTIONS[section]))
            for finding in findings:
                self.stdout.write(f"  {self._label(finding)}  {finding.message}")
                if finding.hint and finding.status is not Status.OK:
                    self.stdout.write(f"        hint: {finding.hint}")
        failures, warnings = len(diagnosis.failures), len(diagnosis.warnings)
        summary = f"{failures} failure(s), {warnings} warning(s)"
        if diagnosis.ok:
            self.stdout.write(self.style.SUCCESS(f"Delivery can work ({summary})."))
        else:
            self.stdout.write(self.style.ERROR(f"Delivery cannot work ({summary})."))
