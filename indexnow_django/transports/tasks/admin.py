"""What the admin shows of a ``django.tasks`` task that sent a history row."""

from __future__ import annotations

from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _

__all__ = ["task_html"]


def task_html(task_id: str, backend: str) -> str:
    """A ``django.tasks`` task: its id, and with django-tasks-db its state and admin page."""
    try:
        from django_tasks_db.models import DBTaskResult
    except ImportError:
        return format_html("task {} ({})", task_id, _("backend {}").format(backend))
    try:
        row = DBTaskResult.objects.filter(pk=task_id).values_list("status", flat=True).first()
    except Exception:  # not a UUID, no table
        row = None
    if row is None:
        return format_html("task {} ({})", task_id, _("no longer kept by django-tasks-db"))
    for name in (
        "admin:django_tasks_database_dbtaskresult_change",
        "admin:django_tasks_db_dbtaskresult_change",
    ):
        try:
            url = reverse(name, args=[task_id])
        except NoReverseMatch:
            continue
        return format_html('task <a href="{}">{}</a> ({})', url, task_id, str(row).lower())
    return format_html("task {} ({})", task_id, str(row).lower())
