"""What the admin shows of an rq job that sent a history row: its status and django-rq's page."""

from __future__ import annotations

import logging

from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _

from .queue import connection

logger = logging.getLogger("indexnow_django.admin")

__all__ = ["JOB_LOOKUP_TIMEOUT", "job_html"]

#: Seconds the detail page waits for Redis when it looks a job up.
JOB_LOOKUP_TIMEOUT = 1.0


def job_admin_url(queue: str, job_id: str) -> str | None:
    """django-rq's page of a job, when django-rq's views are installed: in the admin (its
    admin integration) or under ``include("django_rq.urls")``."""
    from django_rq.settings import get_queues_map

    index = get_queues_map().get(queue)
    if index is None:
        return None
    for name in ("admin:django_rq_job_detail", "django_rq:job_detail"):
        try:
            return reverse(name, args=[index, job_id])
        except NoReverseMatch:
            continue
    return None


def job_status(queue: str, job_id: str) -> str:
    """rq's status of a job (``failed``, ``finished``...), or why it is not known."""
    from rq.exceptions import NoSuchJobError
    from rq.job import Job

    try:
        job = Job.fetch(job_id, connection=connection(queue, timeout=JOB_LOOKUP_TIMEOUT))
        status = job.get_status()
    except NoSuchJobError:
        return "gone"
    except Exception as exc:
        logger.info("IndexNow admin cannot look up job=%s queue=%s: %s", job_id, queue, exc)
        return "unknown"
    return str(getattr(status, "value", status) or "gone")


def job_html(queue: str, job_id: str) -> str:
    """The job, its status, and a link to django-rq's page of it when it failed."""
    status = job_status(queue, job_id)
    url = job_admin_url(queue, job_id)
    if status == "failed" and url:
        return format_html(
            '<a href="{}">{}</a> ({})',
            url,
            job_id,
            _("failed: see it in django-rq's failed job registry, where it can be requeued"),
        )
    if status == "gone":
        return format_html("rq job {} ({})", job_id, _("no longer kept by rq"))
    return format_html("rq job {} ({})", job_id, status)
