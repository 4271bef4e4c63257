"""What the history does for crawl receipts: the URLs of an accepted POST recorded as waiting
for crawlers, and their removal with the history's records.

Called by :mod:`indexnow_django.sending.history` (the sending core), so it reaches no
transport: the rest of :mod:`indexnow_django.crawl` runs in the middleware and rq's worker.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import router, transaction

from .models import CrawlReceipt, CrawlWait, url_key

if TYPE_CHECKING:
    from ..models import Delivery

logger = logging.getLogger(__name__)

__all__ = ["purge", "wait_for_crawlers"]


def wait_for_crawlers(delivery: Delivery) -> None:
    """Record the URLs of an accepted POST as waiting for crawlers (one bulk INSERT, with the
    POST's history record). Never raises."""
    waits = [
        CrawlWait(
            url=url,
            url_key=url_key(url),
            delivery_id=delivery.pk,
            engine=delivery.engine,
            batch_id=delivery.batch_id,
            accepted_at=delivery.sent_at,
        )
        for url in delivery.url_list
    ]
    try:
        using = router.db_for_write(CrawlWait)
        with transaction.atomic(using=using):
            CrawlWait.objects.using(using).bulk_create(waits, batch_size=1000)
    except Exception:
        logger.warning(
            "IndexNow crawl: the URLs of batch=%s engine=%s are not waited for",
            delivery.batch_id,
            delivery.engine,
            exc_info=True,
        )


def purge(before: datetime) -> int:
    """Delete the receipts and waits of acceptances older than ``before`` (with the history's
    records); return how many receipts went."""
    CrawlWait.objects.filter(accepted_at__lt=before).delete()
    deleted: int = CrawlReceipt.objects.filter(accepted_at__lt=before).delete()[0]
    return deleted
