"""A command that runs until told to stop, like a consumer loop: it saves, then waits."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tests.testapp.models import Page


class Command(BaseCommand):
    help = "Save /served/first/, wait until STOP_FILE exists, save /served/last/ and end."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("stop_file", type=Path)
        parser.add_argument("--timeout", type=float, default=60.0)

    def handle(self, *args: Any, stop_file: Path, timeout: float, **options: Any) -> None:
        Page.objects.create(path="/served/first/")
        self.stdout.write("saved first", ending="\n")
        self.stdout.flush()
        deadline = time.monotonic() + timeout
        while not stop_file.exists():
            if time.monotonic() > deadline:
                raise CommandError(f"{stop_file} did not appear within {timeout} s")
            time.sleep(0.05)
        Page.objects.create(path="/served/last/")
        self.stdout.write("saved last")
