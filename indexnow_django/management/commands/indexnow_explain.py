"""``manage.py indexnow_explain app_label.Model PK``: what applies to one object, and why.

Sends nothing: see :mod:`indexnow_django.ops.explain`.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from indexnow_django.conf import get_settings
from indexnow_django.exceptions import IndexNowConfigError
from indexnow_django.ops.explain import ExplainError, explain


class Command(BaseCommand):
    help = (
        "Explain what IndexNow does with one object, sending nothing: the registration that "
        "covers it, whether it is public and why, its URLs per language and host, the hosts' "
        "keys, the debounce state per engine, a scheduled submission, its last deliveries."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("model", metavar="app_label.Model")
        parser.add_argument("pk", metavar="PK")
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            conf = get_settings()
        except IndexNowConfigError as exc:
            raise CommandError(str(exc)) from exc
        try:
            report = explain(options["model"], options["pk"], conf)
        except ExplainError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, default=str))
            return
        self._text(report)

    def _text(self, report: dict[str, Any]) -> None:
        write = self.stdout.write
        obj = report["object"]
        write(f"{obj['model']} pk={obj['pk']}: {obj['str']}")
        covered = report["covered_by"]
        if covered is None:
            write("  Covered by: nothing")
        elif "integration" in covered:
            name = covered.get("name", "Wagtail")
            write(f"  Covered by: the {name} integration ({covered['integration']})")
        else:
            via = (
                f" (registered for {covered['model']})" if covered["model"] != obj["model"] else ""
            )
            fields = ", ".join(covered["fields"]) if covered["fields"] is not None else "any change"
            write(f"  Covered by: {covered['class']}{via}; fields: {fields}")
        if report["public"] is not None:
            write(f"  Public now: {'yes' if report['public'] else 'no'}")
        for reason in report["why"]:
            write(f"    - {reason}")
        write("  URLs:" if report["urls"] else "  URLs: none")
        for entry in report["urls"]:
            language = f"[{entry['language']}] " if entry["language"] else ""
            shown = entry["url"] or entry["given"]
            if entry.get("allowed"):
                previous = (
                    f"; previous keys {', '.join(entry['previous_keys'])}"
                    if entry["previous_keys"]
                    else ""
                )
                write(
                    f"    {language}{shown}: host {entry['host']} allowed, key {entry['key']}, "
                    f"key file {entry['key_file']}{previous}"
                )
            else:
                write(self.style.WARNING(f"    {language}{shown}: {entry['problem']}"))
        if report["debounce"]:
            write("  Debounce:")
            for state in report["debounce"]:
                last = (
                    f" (last accepted {state['last_accepted']})"
                    if state.get("last_accepted")
                    else ""
                )
                write(f"    {state['engine']} {state['url']}: {state['state']}{last}")
        scheduled = report["scheduled"]
        if scheduled is not None:
            write(
                f"  Scheduled submission at {scheduled['at']}: {scheduled['state']} "
                f"(job {scheduled['job_id']})"
            )
        deliveries = report["deliveries"]
        if deliveries is None:
            write("  Last deliveries: the history is off (HISTORY['ENABLED'])")
        elif not deliveries:
            write("  Last deliveries: none in the history")
        else:
            write("  Last deliveries:")
            for row in deliveries:
                status = row["status"] if row["status"] is not None else "-"
                if row["outcome"] == "skipped":
                    write(
                        f"    {row['sent_at']} {row['host']}: skipped by the preflight "
                        f"({row['answer']}), batch {row['batch_id']}"
                    )
                    continue
                write(
                    f"    {row['sent_at']} {row['engine']} {row['host']}: {row['outcome']} "
                    f"({status}), {row['url_count']} URL(s), batch {row['batch_id']}, "
                    f"attempt {row['attempt']}"
                )
        crawled = report["crawled"]
        if crawled is not None:
            write(self._crawled(crawled))
        write("  Verdict:")
        for line in report["verdict"]:
            write(f"    - {line}")

    def _crawled(self, crawled: list[dict[str, Any]]) -> str:
        from ...crawl.receipts import after_text, label

        if not crawled:
            return "  Last fetch per crawler: no verified crawler fetched its URLs after acceptance"
        lines = ["  Last fetch per crawler:"]
        for row in crawled:
            lines.append(
                f"    {label(row['crawler'])} ({row['crawler']}) {row['fetched_at']} {row['url']}: "
                f"{after_text(row['after'])} after its acceptance by {row['engine']}, "
                f"answered {row['status']}"
            )
        return "\n".join(lines)
