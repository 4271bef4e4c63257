"""IndexNow registrations of the third-party apps' models, as docs/third-party.md shows."""

from __future__ import annotations

from indexnow_django import register
from tests.thirdparty.models import Lesson

register(Lesson)
