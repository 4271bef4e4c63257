"""The transports: how a flush's URLs get to whatever sends them.

One family, chosen once from ``DISPATCH`` (:func:`chosen`), each a
:class:`~indexnow_django.transports.base.Transport`:

``rq`` (:mod:`.rq`, ``DISPATCH: "queue"``)
    a django-rq job per flush (or per coalescing window), run by an rq worker;
    retries and publications through rq's scheduler.
``tasks`` (:mod:`.tasks`, ``DISPATCH: "tasks"``)
    a ``django.tasks`` task per flush, on ``TASKS["BACKEND"]``; retries and
    publications with ``run_after``.
``sync`` (:mod:`.sync`, ``DISPATCH: "sync"``)
    sent by the process that flushed, after the response.

Every consumer (dispatch, scheduling, ``indexnow_submit``, the admin,
``indexnow_explain``, ``indexnow_check`` and the checks) asks the chosen
transport, and a running delivery gives back to it what must go later; none
reads ``DISPATCH``, and none but the transports imports rq, django-rq or
django-tasks-db (the admin's history asks :func:`job_html` about a row's job or
task). What a transport runs is the same sending
core (:mod:`indexnow_django.sending`), which knows nothing of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils.module_loading import import_string

from .base import Enqueued, Publication, Transport

if TYPE_CHECKING:
    from ..conf import IndexNowSettings

__all__ = ["Enqueued", "Publication", "Transport", "chosen", "job_html"]


def chosen(conf: IndexNowSettings | None = None) -> Transport:
    """The transport ``DISPATCH`` selects for ``conf`` (the current settings by default)."""
    if conf is None:
        from ..conf import get_settings

        conf = get_settings()
    cls: type[Transport] = import_string(conf.transport_path)
    return cls(conf)


def job_html(queue: str, job_id: str) -> str:
    """The job or task that sent a history row (``queue`` and ``job_id`` are the row's), as
    the admin shows it: a row's queue says which transport ran it, whatever is chosen now."""
    from .tasks.enqueue import TASK_QUEUE_PREFIX

    if queue.startswith(TASK_QUEUE_PREFIX):
        from .tasks.admin import task_html

        return task_html(job_id, queue.removeprefix(TASK_QUEUE_PREFIX))
    from .rq.admin import job_html as rq_job_html

    return rq_job_html(queue, job_id)
