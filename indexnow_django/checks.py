"""Django system checks for indexnow_django (ids ``indexnow.E…`` and ``indexnow.W…``).

The settings checks report :func:`indexnow_django.conf.validate`'s problems, so
``manage.py check`` and the runtime agree on what is valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core import checks

from .conf import validate

__all__ = ["check_settings", "register_checks"]


def check_settings(app_configs: Sequence[Any] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Every problem in ``settings.INDEXNOW`` as a ``checks.Error``."""
    return [checks.Error(p.msg, hint=p.hint, id=p.id) for p in validate()]


def register_checks() -> None:
    checks.register(check_settings, "indexnow")
