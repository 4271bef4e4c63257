"""The app's database models: :class:`Delivery`, the record of one POST to an engine,
:class:`TaskHeartbeat`, a delivery task still running (see :mod:`indexnow_django.tasks`),
(and :class:`~indexnow_django.sending.pending.PendingSubmission` and
:class:`~indexnow_django.crawl.models.CrawlReceipt` and ``CrawlWait``, kept with their own
code).

Rows are written by :mod:`indexnow_django.sending.history` (one INSERT per POST) and
shown by the admin (:mod:`indexnow_django.admin`). Nothing here reads settings or connects
signals.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

__all__ = ["CrawlReceipt", "CrawlWait", "Delivery", "PendingSubmission", "TaskHeartbeat"]


class Delivery(models.Model):
    """One POST of one batch of URLs for one host to one engine, and what it answered."""

    class Outcome(models.TextChoices):
        ACCEPTED = "accepted", _("accepted")
        RETRY = "retry", _("retry")
        REJECTED = "rejected", _("rejected")
        DRY_RUN = "dry_run", _("dry run")
        SKIPPED = "skipped", _("skipped")  # not posted: the preflight held the URLs back

    #: URLs are stored one a line: a newline cannot occur in a normalized URL.
    URL_SEPARATOR = "\n"

    # Explicit, so the migration does not depend on the project's DEFAULT_AUTO_FIELD.
    id = models.BigAutoField(primary_key=True)
    sent_at = models.DateTimeField(_("sent at"), db_index=True)
    batch_id = models.CharField(_("batch id"), max_length=64, db_index=True)
    attempt = models.PositiveIntegerField(_("attempt"), default=1)
    engine = models.CharField(_("engine"), max_length=255)
    host = models.CharField(_("host"), max_length=255)
    url_count = models.PositiveIntegerField(_("URLs"))
    outcome = models.CharField(_("outcome"), max_length=16, choices=Outcome.choices)
    status = models.PositiveSmallIntegerField(_("status"), null=True, blank=True)
    answer = models.TextField(_("answer"), blank=True)
    duration = models.FloatField(_("duration (s)"), default=0.0)
    #: The job or task that made the POST, when a worker did ("" otherwise); ``queue`` says
    #: which transport ran it.
    job_id = models.CharField(_("job id"), max_length=128, blank=True)
    queue = models.CharField(_("queue"), max_length=128, blank=True)
    urls = models.TextField(_("URLs"))
    #: When the unit of work flushed the URLs (from the batch id), the same for every
    #: attempt of a batch; ``None`` for a batch id that does not carry it.
    flushed_at = models.DateTimeField(_("flushed at"), null=True, blank=True, db_index=True)

    class Meta:
        verbose_name = _("delivery")
        verbose_name_plural = _("deliveries")
        ordering = ["-sent_at", "-pk"]
        indexes = [
            # The health of a host and engine (indexnow_django.ops.health): its newest POST of
            # each outcome, the failures since the last accepted one.
            models.Index(
                fields=["host", "engine", "outcome", "sent_at"], name="indexnow_host_engine_outcome"
            ),
        ]
        permissions = [
            ("send_again", _("Can send the URLs of deliveries again")),
            ("submit_urls", _("Can submit URLs to IndexNow")),
        ]

    def __str__(self) -> str:
        # As indexnow_submit says it: the host whose URLs were sent, then the engine.
        return f"{self.host} → {self.engine}: {self.url_count} URL(s) {self.get_outcome_display()}"

    @property
    def url_list(self) -> list[str]:
        """The URLs of the POST, in the order they were sent."""
        return [url for url in self.urls.split(self.URL_SEPARATOR) if url]


class TaskHeartbeat(models.Model):
    """A delivery task that a django-tasks-db worker is running: written when it starts,
    renewed every few seconds, removed when it ends (see :mod:`indexnow_django.tasks`)."""

    task_id = models.CharField(_("task id"), max_length=64, primary_key=True)
    beat_at = models.DateTimeField(_("last heartbeat"))
    #: The machine and process that run it.
    host = models.CharField(_("host"), max_length=255)
    pid = models.PositiveIntegerField(_("process id"))

    class Meta:
        verbose_name = _("task heartbeat")
        verbose_name_plural = _("task heartbeats")

    def __str__(self) -> str:
        return f"task {self.task_id} at {self.beat_at.isoformat()}"


# Kept beside the code that writes and reads it; imported here so that Django
# (and its migrations) know the model.
from .crawl.models import CrawlReceipt, CrawlWait  # noqa: E402
from .sending.pending import PendingSubmission  # noqa: E402
