"""Crawl receipts' tables: :class:`CrawlWait`, a URL an engine accepted, which crawlers are
waited for; :class:`CrawlReceipt`, an engine's crawler fetched it after the acceptance."""

from __future__ import annotations

import hashlib

from django.db import models
from django.utils.translation import gettext_lazy as _

__all__ = ["CrawlReceipt", "CrawlWait", "url_key"]


def url_key(url: str) -> str:
    """The indexed digest a receipt is found by (a URL is too long for every database's
    indexes)."""
    return hashlib.sha256(url.encode()).hexdigest()[:32]


class _Accepted(models.Model):
    """A URL of an accepted POST: the fields a wait and a receipt share."""

    id = models.BigAutoField(primary_key=True)
    url = models.TextField(_("URL"))
    url_key = models.CharField(_("URL digest"), max_length=32)
    #: The accepted POST (no constraint: the history's retention deletes waits and receipts
    #: first, in one statement each, and a record deleted by hand leaves them harmless).
    delivery = models.ForeignKey(
        "indexnow.Delivery",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        verbose_name=_("accepted POST"),
    )
    #: The engine that accepted the URL, as in the history, and the batch of that POST.
    engine = models.CharField(_("engine"), max_length=255)
    batch_id = models.CharField(_("batch id"), max_length=64)
    accepted_at = models.DateTimeField(_("accepted at"))

    class Meta:
        abstract = True


class CrawlReceipt(_Accepted):
    """The first verified fetch of a URL by one crawler after the URL's latest accepted POST.

    One per URL, crawler and flush (the batch whose acceptance started the wait): a new
    accepted POST of the URL starts a new wait. Kept as long as the history: the retention
    of :mod:`indexnow_django.sending.history` removes receipts with the records they follow.
    """

    #: ``bingbot``, ``yandexbot``, ``seznambot``, ``yeti``, ``yepbot``.
    crawler = models.CharField(_("crawler"), max_length=32)
    fetched_at = models.DateTimeField(_("fetched at"))
    #: Seconds from the acceptance to the fetch.
    after = models.FloatField(_("seconds after acceptance"))
    #: The status the site answered the crawler.
    status = models.PositiveSmallIntegerField(_("status"))
    #: The crawler's address (verified): never a visitor's.
    address = models.GenericIPAddressField(_("crawler address"))

    class Meta:
        verbose_name = _("crawl receipt")
        verbose_name_plural = _("crawl receipts")
        constraints = [
            models.UniqueConstraint(
                fields=["url_key", "crawler", "batch_id"], name="indexnow_crawl_one_per_wait"
            ),
        ]
        indexes = [
            # The report's period and the retention's cut.
            models.Index(fields=["accepted_at"], name="indexnow_crawl_accepted_at"),
            # A delivery record's receipts.
            models.Index(fields=["batch_id"], name="indexnow_crawl_batch"),
        ]

    def __str__(self) -> str:
        return f"{self.url} fetched by {self.crawler} {self.after:.0f}s after acceptance"


class CrawlWait(_Accepted):
    """One URL of one accepted POST, recorded with the POST while ``CRAWL["ENABLED"]``: what a
    crawler's fetch is matched with (by the URL's digest, through an index, on any
    database) and what the report counts as accepted."""

    class Meta:
        verbose_name = _("URL waiting for crawlers")
        verbose_name_plural = _("URLs waiting for crawlers")
        indexes = [
            # A fetch's acceptances: the URL's, up to the fetch.
            models.Index(fields=["url_key", "accepted_at"], name="indexnow_wait_url"),
            # The report's period and the retention's cut.
            models.Index(fields=["accepted_at"], name="indexnow_wait_accepted_at"),
        ]

    def __str__(self) -> str:
        return f"{self.url} accepted by {self.engine} at {self.accepted_at.isoformat()}"
