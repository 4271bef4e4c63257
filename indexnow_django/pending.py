"""URLs kept in the database while no queue can take them, until a worker can send them.

When Redis cannot take a flush's job, the URLs are sent from the web process
(see :mod:`indexnow_django.dispatch`), once and without retries. What that
send could not get accepted for a reason that may pass (429, 5xx, a timeout,
a network error; or the send itself failing) is kept here, one
:class:`PendingSubmission` row per engine, in the same database as the change
that produced it. The worker class (:mod:`indexnow_django.worker`) looks for
such rows every few seconds and turns each into a delivery job
(:func:`enqueue_pending`), with its retries, once Redis takes jobs again.
Final rejections (400, 403, 422) are not kept: sending them again would not
help.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db import models, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .conf import IndexNowSettings

if TYPE_CHECKING:
    from rq.queue import Queue

logger = logging.getLogger(__name__)

__all__ = ["ENQUEUE_TIMED_OUT", "PendingSubmission", "enqueue_pending", "keep"]

#: Rows turned into jobs per look: a long outage's backlog drains in slices.
DRAIN_SLICE = 100

#: The reason of a row kept because the enqueue of its flush timed out: Redis may
#: still have taken the job, and only one of the two is sent.
ENQUEUE_TIMED_OUT = "the enqueue timed out"


class PendingSubmission(models.Model):
    """URLs that a send from the web process could not deliver, waiting for a worker."""

    #: URLs (and engine endpoints) are stored one a line: no newline occurs in either.
    SEPARATOR = "\n"

    id = models.BigAutoField(primary_key=True)
    kept_at = models.DateTimeField(_("kept at"), default=timezone.now, db_index=True)
    batch_id = models.CharField(_("batch id"), max_length=64)
    #: Engine endpoints, one a line; empty: every configured engine.
    engines = models.TextField(_("engines"), blank=True)
    force = models.BooleanField(_("ignore the debounce store"), default=False)
    reason = models.TextField(_("reason"), blank=True)
    urls = models.TextField(_("URLs"))
    #: Those of the URLs whose page is gone (unpublished, deleted), one a line.
    gone = models.TextField(_("gone URLs"), blank=True)

    class Meta:
        app_label = "indexnow"
        verbose_name = _("pending submission")
        verbose_name_plural = _("pending submissions")
        ordering = ["kept_at", "pk"]

    def __str__(self) -> str:
        return f"{len(self.url_list)} URL(s) of batch {self.batch_id}"

    @property
    def url_list(self) -> list[str]:
        return [url for url in self.urls.split(self.SEPARATOR) if url]

    @property
    def gone_list(self) -> list[str]:
        return [url for url in self.gone.split(self.SEPARATOR) if url]

    @property
    def engine_list(self) -> list[str] | None:
        """The engine endpoints to send to, or ``None`` for every configured engine."""
        return [engine for engine in self.engines.split(self.SEPARATOR) if engine] or None


def keep(
    urls: Sequence[str],
    *,
    gone: Sequence[str] = (),
    batch_id: str,
    engines: Sequence[str] | None,
    force: bool,
    reason: str,
) -> bool:
    """Keep ``urls`` (for ``engines``, or every engine) until a worker can send them.

    ``gone``: those of ``urls`` whose page is gone. Returns whether they were kept.

    Never raises: a database that cannot take them is logged, with the URLs.
    """
    if not urls:
        return True
    kept = set(urls)
    try:
        PendingSubmission.objects.create(
            batch_id=batch_id,
            engines=PendingSubmission.SEPARATOR.join(engines or []),
            force=force,
            reason=reason[:2000],
            urls=PendingSubmission.SEPARATOR.join(urls),
            gone=PendingSubmission.SEPARATOR.join(url for url in gone if url in kept),
        )
    except Exception:
        logger.exception(
            "IndexNow could not keep batch=%s count=%d in the database; not sent: %s",
            batch_id,
            len(urls),
            " ".join(urls[:20]),
        )
        return False
    logger.warning(
        "IndexNow kept batch=%s count=%d engines=%s in the database: a worker sends them once "
        "the queue takes jobs again (%s)",
        batch_id,
        len(urls),
        ",".join(engines) if engines else "all",
        reason,
    )
    return True


def enqueue_pending(queue: Queue, conf: IndexNowSettings) -> list[str]:
    """Turn the oldest kept rows into delivery jobs on ``queue``; return the jobs' ids.

    Each row becomes one job (attempt 1, its batch id) and is deleted in the
    same transaction, so that two workers never both enqueue it and a Redis
    that fails again leaves it in place. Raises on database or Redis errors.
    """
    from .transports.rq.queue import batch_has_run, enqueue_delivery

    job_ids: list[str] = []
    for pk in PendingSubmission.objects.values_list("pk", flat=True)[:DRAIN_SLICE]:
        with transaction.atomic():
            row = PendingSubmission.objects.filter(pk=pk).first()
            if row is None or not PendingSubmission.objects.filter(pk=pk).delete()[0]:
                continue  # taken by another worker
            if row.reason.startswith(ENQUEUE_TIMED_OUT) and batch_has_run(queue, row.batch_id):
                logger.info(
                    "IndexNow kept batch=%s dropped: its job reached Redis after all and ran",
                    row.batch_id,
                )
                continue
            job = enqueue_delivery(
                queue,
                row.url_list,
                gone=row.gone_list,
                batch_id=row.batch_id,
                engines=row.engine_list,
                force=row.force,
                conf=conf,
            )
        logger.info(
            "IndexNow kept batch=%s count=%d queued job=%s (kept since %s)",
            row.batch_id,
            len(row.url_list),
            job.id,
            row.kept_at.isoformat(),
        )
        job_ids.append(job.id)
    return job_ids
