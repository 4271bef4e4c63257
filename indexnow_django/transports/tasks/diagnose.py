"""``indexnow_check``'s findings about django.tasks' transport: the backend, its queue (the one a
worker serves), and whether a worker takes this app's tasks: on django-tasks-db from its table
(the tasks waiting, running, failed, and when the sweep for dead workers' deliveries is due),
on a backend whose queue cannot be read (Celery's, django-tasks-rq's) from the marks the app's
tasks leave in the debounce cache (:func:`~.enqueue.worker_marks`)."""

from __future__ import annotations

from typing import Any

from ...conf import IndexNowSettings
from ...ops.findings import NO_WORKER_FAILS_AFTER, Diagnosis, Status
from ...protocol.client import excerpt

__all__ = ["diagnose"]


def diagnose(diag: Diagnosis, conf: IndexNowSettings) -> list[str]:
    """Add the task backend's findings to ``diag`` (no worker host names are known)."""
    _tasks_section(diag, conf)
    return []


def _tasks_section(diag: Diagnosis, conf: IndexNowSettings) -> None:
    """The ``django.tasks`` backend: which, whether it defers, and (django-tasks-db) what waits."""
    from ...compat.tasks import (
        is_celery_backend,
        is_database_backend,
        is_rq_backend,
        tasks_framework,
    )
    from .enqueue import backend, queue_of, runs_on_enqueue

    framework = tasks_framework()
    try:
        task_backend = backend(conf)
    except Exception as exc:
        diag.add(
            "tasks",
            Status.FAIL,
            f"task backend {conf.tasks_backend!r} cannot be loaded: {exc}",
            "Fix settings.TASKS (manage.py check lists the backend's own problems).",
            backend=conf.tasks_backend,
        )
        return
    kind = f"{type(task_backend).__module__}.{type(task_backend).__qualname__}"
    defers = bool(task_backend.supports_defer)
    where = "runs each task as it is enqueued" if runs_on_enqueue(task_backend) else "queues tasks"
    celery = is_celery_backend(task_backend)
    queue = queue_of(task_backend, conf.tasks_queue)
    named = f"queue {conf.tasks_queue!r}"
    if queue != conf.tasks_queue:
        named += f" (Celery's queue {queue!r})"
    diag.add(
        "tasks",
        Status.OK,
        f"backend {conf.tasks_backend!r} ({kind}, {framework.name if framework else '?'}), "
        f"{named}: {where}; "
        + ("defers tasks (retries and scheduled publications run)" if defers else "cannot defer"),
        backend=conf.tasks_backend,
        backend_class=kind,
        queue=conf.tasks_queue,
        worker_queue=queue,
        supports_defer=defers,
    )
    if is_database_backend(task_backend):
        _database_tasks(diag, conf, framework)
    elif is_rq_backend(task_backend):
        worker = (
            f"python manage.py rqworker {queue} --with-scheduler --job-class django_tasks_rq.Job"
        )
        _worker_marks(diag, conf, queue, f"the tasks are rq jobs; workers: {worker}", worker)
    elif celery:
        worker = f"celery -A <your Celery app> worker -Q {queue}"
        _worker_marks(
            diag, conf, queue, f"the tasks go to Celery ({celery}); workers: {worker}", worker
        )
    elif not runs_on_enqueue(task_backend):
        diag.add(
            "tasks",
            Status.WARN,
            f"whether a worker takes the tasks of backend {conf.tasks_backend!r} ({kind}) is "
            "not known to this check",
            "Make sure a worker of that backend serves the queue; its tasks are "
            "indexnow_django.tasks.deliver and indexnow_django.tasks.publish.",
        )


def _worker_marks(
    diag: Diagnosis, conf: IndexNowSettings, queue: str, how: str, worker: str
) -> None:
    """Whether a worker takes this app's tasks, from the marks they leave (see the module):
    a task due and untaken for over a minute fails; no task of the app taken yet is a warning
    (not known until one runs)."""
    import time

    from .enqueue import worker_marks

    try:
        waiting, taken = worker_marks(conf)
    except Exception as exc:
        diag.add(
            "tasks",
            Status.WARN,
            "whether a worker takes this app's tasks is not known: the debounce cache "
            f"{conf.debounce_cache!r} cannot be read "
            f"({type(exc).__name__}: {excerpt(str(exc), 120)})",
            f"Make sure a worker serves queue {queue!r}: {worker}",
        )
        return
    now = time.time()
    waited = None if waiting is None else max(0.0, now - float(waiting))
    took = None if taken is None else max(0.0, now - float(taken))
    data: dict[str, Any] = {
        "waiting_seconds": None if waited is None else round(waited),
        "taken_seconds_ago": None if took is None else round(took),
    }
    if waited is not None and waited > NO_WORKER_FAILS_AFTER:
        since = "" if took is None else f" (a worker last took one {took:.0f}s ago)"
        diag.add(
            "tasks",
            Status.FAIL,
            f"a task of this app has waited {waited:.0f}s on queue {queue!r} and no worker took "
            f"one since{since}: nothing is delivered",
            f"Start a worker that serves queue {queue!r} (under a supervisor, so that it comes "
            f"back): {worker}",
            **data,
        )
        return
    if took is None:
        diag.add(
            "tasks",
            Status.WARN,
            f"no task of this app has run on backend {conf.tasks_backend!r} yet: whether a "
            f"worker takes them from queue {queue!r} is not known until one does (a task "
            f"waiting over {NO_WORKER_FAILS_AFTER:.0f}s then fails this check); {how}",
            "Save a registered object (or manage.py indexnow_submit a URL) and run the check "
            "again. The marks live in the debounce cache: the workers and this command must "
            "share it (indexnow.W002).",
            **data,
        )
        return
    message = f"a worker took this app's last task {took:.0f}s ago (the mark its tasks leave)"
    if waited is not None:
        message += f"; one has waited {waited:.0f}s"
    diag.add("tasks", Status.OK, f"{message}; {how}", **data)


def _database_tasks(diag: Diagnosis, conf: IndexNowSettings, framework: Any) -> None:
    """What waits in django-tasks-db's table: delivery and publication tasks by state, and
    when the sweep for dead workers' deliveries is due (not counted with them)."""
    from django.db import DatabaseError
    from django.db.models import Count, Min, Q
    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult

    from .enqueue import DELIVERY_TASK, PUBLISH_TASK, SWEEP_TASK

    status = framework.status
    now = timezone.now()
    ours = DBTaskResult.objects.filter(
        backend_name=conf.tasks_backend, task_path__in=[DELIVERY_TASK, PUBLISH_TASK, SWEEP_TASK]
    )
    # Deliveries and publications are counted; the sweep is a task of the workers' own.
    sent = Q(task_path__in=[DELIVERY_TASK, PUBLISH_TASK])
    ready = sent & Q(status=status.READY)
    # A task enqueued without run_after waits with the backend's far-future marker: it is
    # due from the moment it was enqueued.
    unscheduled = Q(run_after__year=9999)
    try:
        counts = ours.aggregate(
            due=Count("pk", filter=ready & (Q(run_after__lte=now) | unscheduled)),
            oldest_enqueued=Min("enqueued_at", filter=ready & unscheduled),
            oldest_run_after=Min("run_after", filter=ready & Q(run_after__lte=now)),
            later=Count("pk", filter=ready & Q(run_after__gt=now) & ~unscheduled),
            running=Count("pk", filter=sent & Q(status=status.RUNNING)),
            failed=Count("pk", filter=sent & Q(status=status.FAILED)),
            next_sweep=Min("run_after", filter=Q(task_path=SWEEP_TASK, status=status.READY)),
        )
    except DatabaseError as exc:
        diag.add(
            "tasks",
            Status.WARN,
            f"the tasks in the database could not be read: {excerpt(str(exc), 120)}",
            "Run manage.py migrate.",
        )
        return
    worker = f"python manage.py db_worker --backend {conf.tasks_backend} --queue-name "
    worker += conf.tasks_queue
    message = (
        f"tasks of this app: {counts['due']} waiting to run, {counts['later']} scheduled "
        f"(retries, publications), {counts['running']} running, {counts['failed']} failed"
    )
    next_sweep = counts.pop("next_sweep")
    sweep_in = None if next_sweep is None else round((next_sweep - now).total_seconds())
    if sweep_in is not None:
        due = f"in {sweep_in}s" if sweep_in >= 0 else f"{-sweep_in}s ago"
        message += f"; the sweep for dead workers' deliveries is due {due}"
    data = {k: v for k, v in counts.items() if not k.startswith("oldest_")}
    data["sweep_due_in"] = sweep_in
    since = [when for when in (counts["oldest_enqueued"], counts["oldest_run_after"]) if when]
    waiting = max((now - when).total_seconds() for when in since) if since else 0.0
    data["waiting_seconds"] = round(waiting)
    if counts["due"] and waiting > NO_WORKER_FAILS_AFTER:
        diag.add(
            "tasks",
            Status.FAIL,
            f"{message}; the oldest has waited {waiting:.0f}s: no worker takes them, so "
            "nothing is delivered",
            f"Start a worker (under a supervisor, so that it comes back): {worker}",
            **data,
        )
    else:
        diag.add("tasks", Status.OK, f"{message}; workers: {worker}", **data)
    if counts["failed"]:
        diag.add(
            "tasks",
            Status.WARN,
            f"{counts['failed']} task(s) of this app failed",
            "Each failed task holds the engine's answer (django-tasks-db's admin, Task "
            "Results); fix the cause, then send the URLs again (Send again on the delivery "
            "records, or manage.py indexnow_submit). manage.py prune_db_task_results removes "
            "finished tasks.",
            failed=counts["failed"],
        )
