"""``manage.py indexnow_key``: print a new random key for ``INDEXNOW["KEY"]``."""

from __future__ import annotations

import secrets
from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Print a new random IndexNow key (32 hexadecimal characters) for INDEXNOW['KEY']."

    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(secrets.token_hex(16))
