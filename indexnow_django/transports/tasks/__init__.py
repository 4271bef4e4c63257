"""django.tasks' transport (``DISPATCH: "tasks"``): Django's tasks framework, or the
``django_tasks`` backport on Django 5.2.

A flush becomes one task of ``indexnow_django.tasks.deliver`` on
``TASKS["BACKEND"]`` and its ``QUEUE_NAME`` (:mod:`.enqueue`), run by whatever
worker the backend has (django-tasks-db's ``db_worker``, django-tasks-rq's rq
workers). Retries and scheduled publications are tasks with ``run_after``, when
the backend defers tasks. A backend that runs a task as it is enqueued (the
ImmediateBackend) does so after the response has gone out. When the backend
cannot take a flush, the URLs are sent from the web process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ... import compat
from ...compat.tasks import is_rq_backend
from ...sending.inprocess import send_in_process
from ...sending.parcel import LIVENESS, Parcel
from ..base import Enqueued, Publication, Transport
from .enqueue import (
    FUNCTIONS,
    backend,
    build_tasks,
    cannot_defer,
    enqueue_parcel,
    publication_key,
    runs_on_enqueue,
    schedule_publication,
)

if TYPE_CHECKING:
    from django.core.checks import CheckMessage
    from django.http.response import HttpResponseBase

    from ...ops.findings import Diagnosis

#: A flush's lines are the dispatch's, whichever transport carries it.
logger = logging.getLogger("indexnow_django.dispatch")

__all__ = ["TasksTransport", "build_at_start"]


def build_at_start(functions: Mapping[str, Callable[..., Any]]) -> None:
    """Take the app's task functions (:data:`indexnow_django.tasks.FUNCTIONS`) and, with
    ``DISPATCH: "tasks"``, build the tasks as Django starts, on the configured backend and
    queue (:func:`~.enqueue.build_tasks`), so that a Celery worker knows them. Never
    raises: settings or a backend that cannot be loaded are the checks' to report
    (``indexnow.E023``, ``indexnow.W010``), and enqueueing builds the tasks again."""
    from ...conf import get_settings

    FUNCTIONS.update(functions)

    try:
        conf = get_settings(resolve_hosts=False)
        if conf.dispatch == "tasks":
            build_tasks(conf)
    except Exception as exc:
        logger.debug(
            "IndexNow tasks not built at start (%s: %s)", type(exc).__name__, exc, exc_info=True
        )


class TasksTransport(Transport):
    """Parcels as ``django.tasks`` tasks (see the module)."""

    name = "tasks"

    @property
    def forks_per_job(self) -> bool:  # type: ignore[override]
        """django-tasks-rq's rq worker runs each task in a new process; db_worker does not."""
        try:
            return is_rq_backend(backend(self.conf))
        except Exception:  # the checks report a backend that cannot be loaded
            return False

    def take_flush(
        self,
        parcel: Parcel,
        response: HttpResponseBase | None = None,
        *,
        after_response: bool = False,
    ) -> None:
        conf = self.conf

        def enqueue(response: HttpResponseBase | None = None) -> None:
            try:
                task_id = enqueue_parcel(parcel, conf=conf)
            except Exception as exc:  # the backend cannot take it: never lose the URLs
                logger.warning(
                    "IndexNow flush batch=%s mode=fallback count=%d when=%s: task backend %r "
                    "cannot take the task (%s: %s); sending from this process instead",
                    parcel.batch_id,
                    len(parcel),
                    self.when(response, after_response),
                    conf.tasks_backend,
                    type(exc).__name__,
                    exc,
                )
                send_in_process(parcel, conf, response)  # after it, when one is still to go
                return
            self.log_flush(parcel, "tasks", backend=conf.tasks_backend, task=task_id)

        try:
            inline = runs_on_enqueue(backend(conf))
        except Exception:
            inline = False  # enqueue() says why
        if not (inline and response is not None and compat.run_after_response(response, enqueue)):
            enqueue(response)

    def enqueue(self, parcel: Parcel, delay: float = 0) -> Enqueued:
        return Enqueued(enqueue_parcel(parcel, delay=delay, conf=self.conf))

    def cannot_defer(self) -> str | None:
        return cannot_defer(self.conf)

    def send_later(self, parcel: Parcel, delay: float) -> str:
        return enqueue_parcel(parcel, delay=delay, conf=self.conf)

    put_back = send_later

    # ------------------------------------------------------------ the operator's side

    def diagnose(self, diag: Diagnosis) -> list[str]:
        from .diagnose import diagnose

        return diagnose(diag, self.conf)

    def checks(self) -> list[CheckMessage]:
        from .checks import system_checks

        return system_checks(self.conf)

    def schedule_publication(self, publication: Publication) -> str | None:
        return schedule_publication(publication, self.conf)

    def cannot_schedule(self) -> tuple[str, str] | None:
        refusal = cannot_defer(self.conf)
        if refusal is None:
            return None
        hint = (
            "Use a task backend that defers tasks (django-tasks-db's DatabaseBackend, "
            "django-tasks-rq's RQBackend) for INDEXNOW['TASKS']['BACKEND']."
        )
        return refusal, hint

    def publication_state(self, publication: Publication) -> str:
        try:
            refusal = cannot_defer(self.conf)
            if refusal is not None:
                return f"cannot be scheduled: {refusal} (check indexnow.W003)"
            from django.core.cache import caches

            if caches[self.conf.debounce_cache].get(publication_key(publication)) is not None:
                return (
                    f"enqueued on task backend {self.conf.tasks_backend!r} with run_after at "
                    "its moment"
                )
            return "not found: save the object again to schedule it"
        except Exception as exc:
            return f"unknown: the task backend cannot be asked ({type(exc).__name__}: {exc})"

    @property
    def how_flushes_go(self) -> str:
        return (
            f"each flush becomes a task on backend {self.conf.tasks_backend!r} "
            f"(queue {self.conf.tasks_queue!r})"
        )

    @property
    def describe(self) -> str:
        return f"task backend {self.conf.tasks_backend!r}"


def _task_alive(task_id: str) -> bool:
    """Whether the delivery task ``task_id`` may still send (waiting or running): a claim of
    the debounce store held by a task that died (failed by the sweep that sent it again)
    can be taken back. ``True`` where the backend cannot be asked."""
    from ...compat.tasks import is_database_backend, tasks_framework
    from ...conf import get_settings

    try:
        if not is_database_backend(backend(get_settings(resolve_hosts=False))):
            return True
        from django_tasks_db.models import DBTaskResult

        framework = tasks_framework()
        assert framework is not None
        status = DBTaskResult.objects.filter(pk=task_id).values_list("status", flat=True).first()
    except Exception:
        return True
    return status in (framework.status.READY, framework.status.RUNNING)


LIVENESS["task"] = _task_alive
