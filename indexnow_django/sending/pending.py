"""URLs kept in the database while no queue can take them, until a worker can send them.

When Redis cannot take a flush's job, the URLs are sent from the web process
(see :mod:`indexnow_django.units.dispatch`), once and without retries. What that
send could not get accepted for a reason that may pass (429, 5xx, a timeout,
a network error; or the send itself failing) is kept here, one
:class:`PendingSubmission` row per engine, in the same database as the change
that produced it. The rq worker class looks for such rows every few seconds and
puts them back on their way, with their retries, once Redis takes jobs again
(:mod:`indexnow_django.transports.rq.kept`).
Final rejections (400, 403, 422) are not kept: sending them again would not
help.

A flush in a process whose ``INDEXNOW`` is invalid (a server that never ran
the system checks) is kept here too, its URLs as they were given (a path stays a
path: without valid settings nothing can be normalized), with the problem as
its reason (:func:`keep_unsent`): a process with valid settings sends them,
normalized by its own settings (the rq worker class with the rows above; with
another transport, the first flush of a process, :func:`take_unsent`), and
``indexnow_check`` fails while they wait.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from django.db import models, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .parcel import Parcel

logger = logging.getLogger(__name__)

__all__ = [
    "DRAIN_SLICE",
    "ENQUEUE_TIMED_OUT",
    "SETTINGS_INVALID",
    "PendingSubmission",
    "keep",
    "keep_unsent",
    "take_unsent",
]

#: Rows turned into jobs per look: a long outage's backlog drains in slices.
DRAIN_SLICE = 100

#: The reason of a row kept because the enqueue of its flush timed out: Redis may
#: still have taken the job, and only one of the two is sent.
ENQUEUE_TIMED_OUT = "the enqueue timed out"

#: The start of the reason of a row kept because the settings of the process that
#: flushed it were invalid.
SETTINGS_INVALID = "settings.INDEXNOW is invalid"


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

    @property
    def parcel(self) -> Parcel:
        """What the row keeps, as the parcel a delivery carries."""
        engines = self.engine_list
        return Parcel.of(
            self.url_list,
            batch_id=self.batch_id,
            gone=self.gone_list,
            engines=tuple(engines) if engines is not None else None,
            force=self.force,
        )


def keep(parcel: Parcel, *, reason: str) -> bool:
    """Keep ``parcel`` (for its engines, or every engine) until a worker can send it.

    Returns whether it was kept. Never raises: a database that cannot take it is
    logged, with the URLs.
    """
    if not _store(parcel, reason):
        return False
    logger.warning(
        "IndexNow kept batch=%s count=%d engines=%s in the database: a worker sends them once "
        "the queue takes jobs again (%s)",
        parcel.batch_id,
        len(parcel),
        ",".join(parcel.engines) if parcel.engines else "all",
        reason,
    )
    return True


def keep_unsent(urls: Sequence[str], *, gone: Iterable[str], force: bool, problem: str) -> bool:
    """Keep a flush that this process cannot deliver because its settings are invalid:
    ``urls`` as given, for every engine, until a process with valid settings sends them.

    ``problem`` names what is wrong (it starts with :data:`SETTINGS_INVALID`). Logs an
    ERROR that names it; returns whether the URLs were kept. Never raises.
    """
    if not problem.startswith(SETTINGS_INVALID):
        problem = f"{SETTINGS_INVALID}: {problem}"
    parcel = Parcel.of([_one_line(url) for url in urls], gone=map(_one_line, gone), force=force)
    if not _store(parcel, problem):
        return False
    logger.error(
        "IndexNow kept batch=%s count=%d in the database, not sent: %s. A worker with valid "
        "settings sends them (python manage.py rqworker with indexnow_django.worker.Worker); "
        "manage.py indexnow_check says what is wrong",
        parcel.batch_id,
        len(parcel),
        problem,
    )
    return True


def take_unsent() -> list[PendingSubmission]:
    """The oldest rows that invalid settings kept (up to :data:`DRAIN_SLICE`), removed from
    the table: the caller sends them. Two processes never take the same row. Raises on
    database errors."""
    with transaction.atomic():
        rows = PendingSubmission.objects.select_for_update(skip_locked=True).filter(
            reason__startswith=SETTINGS_INVALID
        )[:DRAIN_SLICE]
        return [row for row in rows if PendingSubmission.objects.filter(pk=row.pk).delete()[0]]


def _one_line(url: str) -> str:
    """``url`` as a row keeps it: one line (a raw URL may hold anything)."""
    return " ".join(str(url).splitlines())


def _store(parcel: Parcel, reason: str) -> bool:
    """A row for ``parcel``; whether the database took it (else logged, with the URLs)."""
    if not parcel.urls:
        return True
    separator = PendingSubmission.SEPARATOR
    try:
        PendingSubmission.objects.create(
            batch_id=parcel.batch_id,
            engines=separator.join(parcel.engines or []),
            force=parcel.force,
            reason=reason[:2000],
            urls=separator.join(parcel.urls),
            gone=separator.join(url for url in parcel.urls if url in parcel.gone),
        )
    except Exception:
        logger.exception(
            "IndexNow could not keep batch=%s count=%d in the database; not sent: %s",
            parcel.batch_id,
            len(parcel),
            " ".join(parcel.urls[:20]),
        )
        return False
    return True
