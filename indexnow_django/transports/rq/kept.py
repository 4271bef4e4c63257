"""The URLs web processes kept in the database while Redis could not take their jobs, queued
again by a worker once it can (:mod:`indexnow_django.sending.pending`).

A backlog goes out merged: the kept rows of one look become one delivery job per
set of engines (and ``force``), queued at once, however many flushes they were
kept from, so that a backlog of N URLs for a host costs about
N / ``BATCH["MAX_URLS"]`` POSTs per engine, not one per flush.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.db import transaction

from ...conf import IndexNowSettings
from ...sending.parcel import Parcel, new_batch_id
from ...sending.pending import DRAIN_SLICE, ENQUEUE_TIMED_OUT, PendingSubmission
from .queue import claim_batch_run, enqueue_parcel

if TYPE_CHECKING:
    from rq.queue import Queue

logger = logging.getLogger(__name__)

__all__ = ["enqueue_kept"]


def enqueue_kept(queue: Queue, conf: IndexNowSettings) -> list[str]:
    """Queue the oldest kept rows on ``queue``, merged (see the module); the jobs' ids.

    The rows are deleted in the transaction that enqueues their jobs, so two
    workers never both queue a row and a Redis that fails again leaves them in
    place. A row kept because its enqueue timed out is dropped when its own job
    reached Redis after all and ran (and marks its batch as run, so that a job
    that reaches Redis later does not send it again). Raises on database or
    Redis errors.
    """
    job_ids: list[str] = []
    with transaction.atomic():
        rows = [
            row
            for row in PendingSubmission.objects.select_for_update(skip_locked=True)[:DRAIN_SLICE]
            # One worker takes each row: the one whose delete removed it.
            if PendingSubmission.objects.filter(pk=row.pk).delete()[0]
        ]
        merged: dict[tuple[tuple[str, ...] | None, bool], list[PendingSubmission]] = {}
        for row in rows:
            if row.reason.startswith(ENQUEUE_TIMED_OUT) and not claim_batch_run(
                queue, row.batch_id, f"kept:{row.pk}"
            ):
                logger.info(
                    "IndexNow kept batch=%s dropped: its job reached Redis after all and ran",
                    row.batch_id,
                )
                continue
            parcel = row.parcel
            merged.setdefault((parcel.engines, parcel.force), []).append(row)
        for (engines, force), group in merged.items():
            urls: dict[str, None] = {}
            gone: set[str] = set()
            for row in group:
                urls.update(dict.fromkeys(row.url_list))
                gone.update(row.gone_list)
            parcel = Parcel.of(
                urls,
                batch_id=new_batch_id(at=group[0].kept_at.timestamp()),
                gone=gone,
                engines=engines,
                force=force,
            )
            job_id = str(enqueue_parcel(queue, parcel, conf=conf).id)
            logger.info(
                "IndexNow kept count=%d of %d flush(es) queued job=%s (kept since %s: %s)",
                len(parcel),
                len(group),
                job_id,
                group[0].kept_at.isoformat(),
                ", ".join(dict.fromkeys(row.batch_id for row in group)),
            )
            job_ids.append(job_id)
    return job_ids
