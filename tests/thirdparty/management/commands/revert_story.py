"""Revert a story to its previous revision, as a site's own command would."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from reversion.models import Version

from tests.thirdparty.models import Story


class Command(BaseCommand):
    help = "Revert a story to the revision before its last."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("pk", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        story = Story.objects.get(pk=options["pk"])
        Version.objects.get_for_object(story)[1].revert()
        self.stdout.write(f"reverted {Story.objects.get(pk=story.pk).slug}")
