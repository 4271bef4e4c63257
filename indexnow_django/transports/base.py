"""What every transport does: the protocol the rest of the package asks, and the values it carries.

A transport takes a flush's parcel from :func:`indexnow_django.units.dispatch.dispatch`
(:meth:`Transport.take_flush`), carries parcels to whatever runs them
(:meth:`Transport.enqueue`, and :meth:`Transport.send_later` for what a running
delivery gives back: retries, held and left POSTs), schedules publications, and
says how it is doing to the admin, ``indexnow_explain``, ``indexnow_submit``,
the system checks and ``indexnow_check``. The delivery itself is the core's
(:mod:`indexnow_django.sending`), the same for every transport.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..sending.inprocess import after_response, send_in_process
from ..sending.parcel import Parcel
from .publication import Publication, whole_seconds

if TYPE_CHECKING:
    from django.core.checks import CheckMessage
    from django.http.response import HttpResponseBase

    from ..conf import IndexNowSettings
    from ..ops.findings import Diagnosis

#: A flush's lines are the dispatch's, whichever transport carries it.
logger = logging.getLogger("indexnow_django.dispatch")

__all__ = ["Enqueued", "Publication", "Transport", "whole_seconds"]


@dataclass(frozen=True)
class Enqueued:
    """A parcel a transport took: the id of its job or task, and, when the transport ran
    it at once (a synchronous queue), why it failed."""

    id: str
    failed: str | None = None


class Transport:
    """The transport ``DISPATCH`` chose (see :mod:`indexnow_django.transports`).

    This base class is the in-process behaviour that every transport falls back
    to; :class:`~indexnow_django.transports.sync.SyncTransport` is it as it stands.
    """

    #: What ``indexnow_check``, ``indexnow_explain`` and the logs call it.
    name: ClassVar[str] = ""
    #: What a failure message tells the user to do to send again.
    again: ClassVar[str] = (
        "Submit its URLs again (the history's Send again, or manage.py indexnow_submit)."
    )
    #: Parcels are sent by the process that flushed them (no worker).
    in_process: ClassVar[bool] = False
    #: Each delivery runs in a process of its own (rq's forking worker): nothing one
    #: keeps in memory is seen by the next.
    forks_per_job: ClassVar[bool] = False
    #: Its workers send the URLs kept in the database (:mod:`indexnow_django.sending.pending`);
    #: otherwise the first flush of a process with valid settings sends those that
    #: invalid settings kept (:func:`indexnow_django.units.dispatch.dispatch`).
    workers_send_kept: ClassVar[bool] = False

    def __init__(self, conf: IndexNowSettings) -> None:
        self.conf = conf

    # ------------------------------------------------------------ the enqueueing side

    def take_flush(
        self,
        parcel: Parcel,
        response: HttpResponseBase | None = None,
        *,
        after_response: bool = False,
    ) -> None:
        """Carry a flush's parcel on (``response``: the request's, still to go out;
        ``after_response``: the flush runs once it has gone). Never raises: what cannot
        be carried is sent from this process."""
        self.log_flush(parcel, "sync", when=self.when(response, after_response))
        send_in_process(parcel, self.conf, response)

    def log_flush(self, parcel: Parcel, mode: str, **fields: object) -> None:
        """The one log line of a flush: its batch, how it went on and where."""
        extra = "".join(f" {key}={value}" for key, value in fields.items())
        logger.info(
            "IndexNow flush batch=%s mode=%s count=%d%s",
            parcel.batch_id,
            mode,
            len(parcel),
            extra,
        )

    def when(self, response: HttpResponseBase | None, late: bool = False) -> str:
        """When a send from this process would go: ``now`` or ``after-response`` (``late``:
        the flush itself runs after the response)."""
        return "after-response" if late or after_response(response) else "now"

    def enqueue(self, parcel: Parcel, delay: float = 0) -> Enqueued:
        """Put ``parcel`` on its way, now or in ``delay`` seconds. Raises when it cannot."""
        raise NotImplementedError(f"{type(self).__name__} sends from the process that flushed")

    def send_later(self, parcel: Parcel, delay: float) -> str:
        """What a running delivery gives back (see
        :class:`~indexnow_django.sending.run.Carrier`)."""
        return self.enqueue(parcel, delay).id

    put_back = send_later

    def near_deadline(self) -> str:
        """Why a delivery past its deadline hands what is left over, for the log."""
        return "the delivery is near its deadline"

    def cannot_defer(self) -> str | None:
        """Why a delivery cannot be put off (a retry, a held POST), or ``None``."""
        return "DISPATCH is synchronous: nothing runs later"

    # ------------------------------------------------------------ scheduled publication

    def schedule_publication(self, publication: Publication) -> str | None:
        """Schedule ``publication`` once; its job's or task's id, or ``None`` when it was
        scheduled before. Raises when it cannot be scheduled (logged by the caller)."""
        raise RuntimeError(self.cannot_defer() or "nothing runs later")

    def cannot_schedule(self) -> tuple[str, str] | None:
        """``(why, hint)`` when publications cannot be scheduled (``indexnow.W003``)."""
        why = (
            "DISPATCH is 'sync'"
            if self.conf.dispatch == "sync"
            else (
                f"DISPATCH is 'auto' and QUEUE['NAME'] {self.conf.queue_name!r} is not in RQ_QUEUES"
            )
        )
        hint = (
            f"Add {self.conf.queue_name!r} to RQ_QUEUES (and set DISPATCH to 'auto' or "
            "'queue'), and run manage.py rqworker --with-scheduler."
        )
        return why, hint

    def cannot_record_crawls(self) -> tuple[str, str] | None:
        """``(why, hint)`` when this transport's workers do not record crawl receipts
        (``indexnow.W050``): the fetches web processes notice wait in the queue's Redis for
        rq's worker of this app, which verifies and records them."""
        from .rq.wiring import WORKER_CLASS_LINE

        why = f"dispatch does not go to rq's queue (DISPATCH is {self.conf.dispatch!r})"
        hint = (
            f"Crawl receipts are kept in the Redis of QUEUE['NAME'] and recorded by rq's "
            f"worker: put {self.conf.queue_name!r} in RQ_QUEUES, use DISPATCH 'auto' or "
            f"'queue', and run the worker with {WORKER_CLASS_LINE}."
        )
        return why, hint

    def publication_state(self, publication: Publication) -> str:
        """Where ``publication`` stands, for ``indexnow_explain``."""
        return "cannot be scheduled: DISPATCH is synchronous (check indexnow.W003)"

    # ------------------------------------------------------------ telling people

    @property
    def describe(self) -> str:
        """What carries the parcels, in a sentence: ``queue 'default'``."""
        return "process that flushed"

    @property
    def how_sent(self) -> str:
        """How URLs submitted by hand go on, for the admin's messages."""
        from django.utils.translation import gettext

        if self.in_process:
            return gettext("sent from the web process")
        return gettext("queued for delivery")

    def local_cache_note(self) -> tuple[str, str | None, str | None]:
        """What a debounce cache local to each process is under this transport's workers
        (``indexnow.W002``): what it is, and what it does and what to do when that differs
        from a cache that keeps nothing (``None``: the same)."""
        if self.forks_per_job:
            return (
                "is local to each process, and rq's worker runs each job in a new process",
                None,
                None,
            )
        # db_worker (or the process that enqueues) runs every task in itself.
        return (
            "is local to each process that runs tasks",
            "each worker debounces only what it sent itself (and forgets it when it "
            "restarts), so with more than one worker an engine may receive a URL again "
            "from another",
            "With a single db_worker this is enough: silence it with "
            "SILENCED_SYSTEM_CHECKS = ['indexnow.W002']. With several workers, point "
            "DEBOUNCE['CACHE'] at a cache they share (DatabaseCache, RedisCache).",
        )

    def chosen_because(self) -> str | None:
        """Why ``DISPATCH: "auto"`` resolved to this transport, for ``indexnow_check``
        (``None``: ``DISPATCH`` names it)."""
        if self.conf.dispatch != "auto":
            return None
        where = "is not in" if self.in_process else "is in"
        return f"QUEUE['NAME'] {self.conf.queue_name!r} {where} RQ_QUEUES"

    @property
    def how_flushes_go(self) -> str:
        """What becomes of a flush, for ``indexnow_check``'s dispatch line."""
        return "URLs are sent by the process that changed them, after the response; no retries"

    # ------------------------------------------------------------ the operator's side
    # A transport with a queue or a backend answers these from its own package (its
    # ``checks`` and ``diagnose`` modules). (What its settings need of its own app's
    # settings is the settings' to validate: :mod:`indexnow_django.conf.dispatch`.)

    def diagnose(self, diag: Diagnosis) -> list[str]:
        """Add this transport's findings to ``indexnow_check``'s ``diag`` (its queue or
        backend, workers, jobs); return the host names its workers run on, where known."""
        from ..ops.findings import Status

        diag.add("queue", Status.OK, "no queue is used (sync dispatch)")
        return []

    def checks(self) -> list[CheckMessage]:
        """This transport's system checks (run with the package's)."""
        return []
