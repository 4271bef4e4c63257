"""A command that saves many tracked objects: one unit of work, one flush."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tests.testapp.models import Page


class Command(BaseCommand):
    help = "Create COUNT pages /made/<n>/."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("count", type=int)

    def handle(self, *args: Any, count: int, **options: Any) -> None:
        for n in range(count):
            Page.objects.create(path=f"/made/{n}/")
        self.stdout.write(f"created {count} pages")
