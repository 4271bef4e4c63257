"""What the admin's pages share: the settings when they are valid, how the chosen transport
sends what a page submits, the colour of each outcome, and the admin's logger."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.urls import URLPattern, path

from ..conf import IndexNowSettings, get_settings

__all__ = ["OUTCOME_COLOURS", "how_sent", "logger", "page", "settings_or_none"]

#: Every module of the admin logs under the one name the admin has always logged under.
logger = logging.getLogger("indexnow_django.admin")

#: The colour of each outcome, in the list and in the chart (its bars, bottom to top).
OUTCOME_COLOURS = {
    "accepted": "#3b8a3e",
    "dry_run": "#8c8c8c",
    "retry": "#d89c1a",
    "rejected": "#c0392b",
    "skipped": "#5b6bb5",
}


def settings_or_none() -> IndexNowSettings | None:
    """The settings, or ``None`` when they are invalid: a page still renders then."""
    from ..exceptions import IndexNowConfigError

    try:
        return get_settings()
    except IndexNowConfigError:
        return None


def how_sent(conf: IndexNowSettings) -> str:
    """How the chosen transport sends what a page submits ("queued for delivery", "sent
    from the web process"), for the message after it: the admin asks the transport."""
    from ..transports import chosen

    return chosen(conf).how_sent


def page(model_admin: Any, route: str, view: Callable[..., Any], suffix: str) -> URLPattern:
    """One of the app's pages under ``model_admin``'s URLs, behind the admin's login, named
    ``<app label>_<model name>_<suffix>`` as Django names its own."""
    opts = model_admin.opts
    pattern: URLPattern = path(
        route,
        model_admin.admin_site.admin_view(view),
        name=f"{opts.app_label}_{opts.model_name}_{suffix}",
    )
    return pattern
