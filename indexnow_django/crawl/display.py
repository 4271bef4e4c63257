"""Crawl receipts in the admin: on a delivery record, and in an object's IndexNow panel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.timezone import localtime
from django.utils.translation import gettext as _

from .receipts import describe, for_batch, label, last_fetches

__all__ = ["delivery_html", "panel_context"]


def delivery_html(batch_id: str, outcome: str, urls: Sequence[str]) -> str:
    """What the record of an accepted POST says of the crawlers' fetches that followed it."""
    if outcome != "accepted":
        return _("not accepted: no crawl is waited for")
    receipts = for_batch(batch_id, urls)
    if not receipts:
        return _("no verified crawler has fetched its URLs since")
    many = len(urls) > 1
    return format_html(
        '<ul class="indexnow-crawled" style="margin:0;padding-left:1.2em">{}</ul>',
        format_html_join(
            "",
            '<li title="{}">{}{}</li>',
            (
                (
                    date_format(localtime(receipt.fetched_at), "DATETIME_FORMAT"),
                    f"{receipt.url}: " if many else "",
                    describe(receipt),
                )
                for receipt in receipts
            ),
        ),
    )


def panel_context(urls: Sequence[str]) -> list[dict[str, Any]]:
    """The last fetch of each crawler among ``urls``, for the object's IndexNow panel."""
    return [
        {
            "crawler": label(receipt.crawler),
            "text": describe(receipt),
            "fetched_at": receipt.fetched_at,
            "url": receipt.url,
        }
        for receipt in last_fetches(urls)
    ]
