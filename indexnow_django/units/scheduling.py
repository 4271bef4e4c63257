"""Scheduled publication: an object's URLs are submitted when its ``publish_at`` comes.

Saving a published object whose ``publish_at`` is in the future schedules one
job or task of the chosen transport (:func:`publish`) at that moment, once the
transaction has committed
(:meth:`~indexnow_django.transports.base.Transport.schedule_publication`). It
carries only the model label, the primary key and the expected publication
timestamp (whole seconds, UTC), and its id is derived from those three
(:attr:`Publication.job_id`), so saving the same object for the same moment
again schedules nothing new: the job already scheduled stands (on rq, the job
in rq's scheduled registry, put there with ``queue.schedule_job(job, at,
unique=True)``).

Moving ``publish_at`` schedules a new job; the old one stays and, when it
fires, finds the time moved and returns. When a job fires it reloads the
object: gone, moved, not public or without URLs, it logs why and returns (a
successful no-op). Otherwise it submits the object's *current* URLs through
the normal delivery (a unit of work, so ``dispatch`` with its retries); a
temporary engine failure is retried there, never by this job. On a site whose
URLs carry the language, "current URLs" are those of every language the object
is public in then (:mod:`indexnow_django.registration.languages`).

With ``DISPATCH: "tasks"`` the publication is a ``django.tasks`` task with
``run_after`` at that moment, carrying the same three values and judged by the
same :func:`publish` (see :func:`indexnow_django.transports.tasks.enqueue.schedule_publication`);
the same moment is enqueued once, as far as the debounce cache is shared.

Scheduling needs the queue or a task backend that defers tasks: with
synchronous dispatch (or a backend whose ``supports_defer`` is false) nothing
is scheduled, a warning is logged, and system check ``indexnow.W003`` says so.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.core import checks
from django.db import transaction
from django.utils import timezone

from ..conf import get_settings, validate
from ..transports import chosen
from ..transports.base import Publication, whole_seconds

if TYPE_CHECKING:
    from django.db import models

    from ..registration.registry import ModelIndexNow

logger = logging.getLogger(__name__)

__all__ = [
    "Publication",
    "check_scheduling",
    "publish",
    "schedule",
    "schedule_now",
    "whole_seconds",
]


def schedule(
    options: ModelIndexNow, instance: models.Model, when: datetime.datetime, *, using: str
) -> None:
    """Schedule the publication of ``instance`` at ``when``, once the transaction commits.

    Called by change tracking for a saved object that is published with a
    ``publish_at`` in the future. Never raises.
    """
    publication = Publication(instance._meta.label, instance.pk, whole_seconds(when))

    def indexnow_schedule_on_commit() -> None:
        schedule_now(publication)

    transaction.on_commit(indexnow_schedule_on_commit, using=using, robust=True)


def schedule_now(publication: Publication) -> str | None:
    """Schedule ``publication`` on the chosen transport, once. Never raises.

    Returns the new job's or task's id, or ``None`` when nothing was scheduled
    (already scheduled, disabled, synchronous dispatch, Redis or the task backend
    unavailable).
    """
    try:
        conf = get_settings()
        if not conf.enabled:
            return None
        transport = chosen(conf)
        refusal = transport.cannot_schedule()
        if refusal is not None:
            logger.warning(
                "IndexNow cannot schedule the publication %s: %s, so its URLs will not be "
                "submitted at that time (see check indexnow.W003)",
                publication,
                refusal[0],
            )
            return None
        scheduled = transport.schedule_publication(publication)
    except Exception:
        logger.exception(
            "IndexNow could not schedule the publication %s; its URLs will not be submitted "
            "at that time (save the object again, or use manage.py indexnow_submit then)",
            publication,
        )
        return None
    if scheduled is None:
        # Scheduled before, by this process or another one, or it already ran.
        logger.info(
            "IndexNow publication already scheduled %s job=%s", publication, publication.job_id
        )
        return None
    logger.info("IndexNow scheduled publication %s job=%s", publication, scheduled)
    return scheduled


def publish(label: str, pk: Any, timestamp: int) -> str:
    """The scheduled job: submit the object's current URLs if it is still due now.

    Returns what it did (kept as the job's or task's result). A stale job (the
    object gone, its time moved, not public, no URLs) returns without sending.
    """
    from ..registration.registry import get_registration
    from .collector import batch, submit

    publication = Publication(label, pk, timestamp)
    try:
        model = apps.get_model(label)
    except (LookupError, ValueError):
        return _stale(publication, "its model no longer exists")
    options = get_registration(model)
    if options is None:
        return _stale(publication, "its model is no longer registered")
    obj = model._base_manager.filter(pk=pk).first()
    if obj is None:
        return _stale(publication, "the object is gone")
    # Judged as of the scheduled moment: a scheduler whose clock runs a little
    # early must not make a due object look unpublished. In every language
    # that the registration's URLs are worked out in.
    states = options.urls_per_language(obj, now=max(timezone.now(), publication.at)).values()
    published = [state for state in states if state.published]
    if published and not any(
        state.when is not None and whole_seconds(state.when) == timestamp for state in published
    ):
        return _stale(publication, "its publication time moved")
    if not any(state.public for state in published):
        return _stale(publication, "it is not public")
    urls = list(dict.fromkeys(url for state in published for url in state.urls))
    if not urls:
        return _stale(publication, "it has no URLs")
    with batch():
        submit(urls)
    logger.info("IndexNow publication due %s count=%d: submitted", publication, len(urls))
    return f"submitted {len(urls)} URL(s)"


def _stale(publication: Publication, reason: str) -> str:
    logger.info("IndexNow publication %s not submitted: %s", publication, reason)
    return f"not submitted: {reason}"


def check_scheduling(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """``indexnow.W003``: a registered model sets ``publish_at`` but dispatch is synchronous,
    or its task backend cannot defer a task."""
    if validate():
        return []  # the settings checks report it
    conf = get_settings(resolve_hosts=False)
    if not conf.enabled:
        return []
    from ..registration.registry import registry

    labels = sorted(model._meta.label for model, options in registry.items() if options.publish_at)
    if not labels:
        return []
    refusal = chosen(conf).cannot_schedule()
    if refusal is None:
        return []
    why, hint = refusal
    return [
        checks.Warning(
            f"{', '.join(labels)} set{'s' if len(labels) == 1 else ''} publish_at, but {why}: "
            "publications cannot be scheduled, so objects saved before their publish_at are "
            "not submitted when it comes.",
            hint=hint,
            id="indexnow.W003",
        )
    ]
