"""Where a flush goes: a queue job, or a synchronous send (minimal version)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .conf import get_settings

logger = logging.getLogger(__name__)

__all__ = ["dispatch"]


def dispatch(urls: Sequence[str]) -> None:
    """Hand ``urls`` to delivery. Never raises."""
    try:
        conf = get_settings()
        if not conf.enabled:
            return
        from .submitter import deliver_now

        deliver_now(urls, conf=conf)
    except Exception:
        logger.exception("IndexNow could not dispatch %d URL(s)", len(urls))
