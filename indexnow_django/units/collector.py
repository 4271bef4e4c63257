"""Units of work: where changed URLs wait until they are flushed, once per unit.

A unit of work is an HTTP request (:class:`~indexnow_django.middleware.IndexNowMiddleware`),
a management command (see :mod:`indexnow_django.units.commands`; none with
``COMMAND_UNITS: False``), a
job run by the rq worker class, a ``django.tasks`` task (see :func:`connect_tasks`), a
Celery task (see :func:`connect_celery`), or
``with batch(): ...``. Each has its own :class:`Collector`,
held in a context variable, so concurrent requests under ASGI never see each
other's URLs. When the unit ends its URLs go to
:func:`indexnow_django.units.dispatch.dispatch` in one call.

A command may run for ever (a worker, a consumer loop, a shell), so a command
holds URLs for :data:`COMMAND_HOLD` seconds at most: a timer flushes what it
holds then, and the end of the command flushes the rest. A short command is
still one flush. Django's ``test`` command (``manage.py test``, whatever
its test runner) is not a unit of work: the tests' commits are flushed as
they happen, where a capture sees them, and nothing is left to flush when
the run ends. A forked child (rq's work horse) never adds to a unit of its
parent.

URLs produced inside a transaction join their unit only when the outermost
transaction commits (``transaction.on_commit(..., robust=True)``); a rolled
back savepoint drops the URLs registered inside it. Outside any unit, the URLs
of one commit are flushed together when it commits (see :class:`_Commit`).

Nothing here raises into the caller's code: a failure to collect or flush is
logged and the request, command or save carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import os
import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator
from itertools import count
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from asgiref.sync import sync_to_async
from django.db import DEFAULT_DB_ALIAS, connections

from ..compat import CommitCallback, on_commit_again
from ..conf import is_enabled

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.http import HttpResponseBase

logger = logging.getLogger(__name__)

__all__ = [
    "COMMAND_HOLD",
    "Collector",
    "GoneURL",
    "batch",
    "changes_on_commit",
    "collect",
    "connect_celery",
    "connect_tasks",
    "current",
    "hand_over",
    "submit",
]

_ids = count(1)
_P = ParamSpec("_P")
_R = TypeVar("_R")


#: This process's id, kept up to date in forked children (no system call per URL).
_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)

#: Seconds a management command holds the URLs it produced before flushing them.
COMMAND_HOLD = 3.0

#: Changes a unit leaves to be worked out together (:attr:`Collector.waiting`) before
#: they are worked out anyway, so that memory stays bounded in a long loop of saves.
LATER_LIMIT = 500


class GoneURL(str):
    """A URL whose page is gone (unpublished, deleted), as change tracking hands it over.

    It travels as a plain string with this mark until the flush, which passes the
    gone URLs to delivery as a separate list: an engine that accepted the URL as
    public within the debounce TTL is told again.
    """

    __slots__ = ()


class Collector:
    """The URLs of one unit of work: deduplicated, in first-seen order, flushed once.

    With ``hold`` (seconds), the URLs are also flushed by a timer that many
    seconds after the first of them arrived, so that a long unit never holds
    them for long. Adding and flushing are safe from several threads.
    """

    def __init__(self, kind: str = "batch", *, hold: float | None = None) -> None:
        self.kind = kind
        self.id = f"{kind}-{next(_ids)}"
        #: Each URL and whether its page is gone (first-seen order; the last side wins).
        self.urls: dict[str, bool] = {}
        self.open = True
        self.hold = hold
        self._pid = _pid
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        #: Changes committed in this unit whose URLs are worked out together before
        #: the flush, as ``(resolve, args)``; ``resolve(*args)`` gives URLs and never
        #: raises. Change tracking appends here for a unit that does not hold URLs
        #: on a timer, and calls :meth:`work_out_waiting` once :data:`LATER_LIMIT` wait.
        self.waiting: list[tuple[Callable[..., Iterable[str]], tuple[Any, ...]]] = []
        #: Change tracking's entries of :attr:`waiting` by object: their index (several
        #: saves of one object in the unit are one change). Emptied with :attr:`waiting`.
        self.by_object: dict[int, int] = {}

    def __repr__(self) -> str:
        return f"<Collector {self.id} urls={len(self.urls)} open={self.open}>"

    def accepts(self) -> bool:
        """Whether URLs produced now in this context belong to this unit."""
        return self.open and self._pid == _pid

    def add(self, urls: Iterable[str]) -> None:
        if self.waiting and not in_event_loop():
            # What came first stays first. In an event loop (``submit()`` from an async
            # view) the ORM may not run: the changes waiting are worked out at the flush.
            self.work_out_waiting()
        with self._lock:
            for url in urls:
                self.urls[url] = isinstance(url, GoneURL)
            if self.hold is not None and self._timer is None and self.urls:
                self._timer = threading.Timer(self.hold, self._flush_held)
                self._timer.daemon = True
                self._timer.start()

    def work_out_waiting(self) -> None:
        """Work out now the URLs of the changes :attr:`waiting` (working out many
        together costs less than one by one, between the queries of the saves)."""
        while self.waiting:
            waiting, self.waiting = self.waiting, []
            self.by_object.clear()
            urls: list[str] = []
            for resolve, args in waiting:
                urls.extend(resolve(*args))
            if urls:
                self.add(urls)

    def _flush_held(self) -> None:
        """The timer: flush what the unit holds now; the unit goes on."""
        with self._lock:
            self._timer = None
            urls, self.urls = self.urls, {}
        try:
            _dispatch(list(urls), gone=_gone(urls), unit=self.id)
        finally:
            connections.close_all()  # this thread's, if dispatch opened any

    def flush(
        self, *, response: HttpResponseBase | None = None, after_response: bool = False
    ) -> None:
        """Close the unit and hand its URLs to ``dispatch`` in one call. Never raises.

        ``after_response``: the request's response has gone out already. Called in an
        event loop (a ``with batch()`` block in a coroutine), the flush runs in a thread of
        its own, where the ORM may work the URLs out, and the loop waits for it; an
        ``async with batch()`` block awaits it instead (see :func:`batch`).
        """
        if in_event_loop():
            off_loop = threading.Thread(
                target=contextvars.copy_context().run,
                args=(self._flush_off_loop, response, after_response),
                name=f"indexnow-flush-{self.id}",
            )
            off_loop.start()
            off_loop.join()
            return
        try:
            self.work_out_waiting()
        except Exception:
            logger.exception("IndexNow could not work out the URLs of unit=%s", self.id)
            self.waiting = []
            self.by_object.clear()
        with self._lock:
            self.open = False
            timer, self._timer = self._timer, None
            urls, self.urls = self.urls, {}
        if timer is not None:
            timer.cancel()
            if timer is not threading.current_thread():
                timer.join()  # a flush it began finishes before the process may end
        _dispatch(
            list(urls),
            gone=_gone(urls),
            response=response,
            after_response=after_response,
            unit=self.id,
        )

    def _flush_off_loop(self, response: HttpResponseBase | None, after_response: bool) -> None:
        try:
            self.flush(response=response, after_response=after_response)
        finally:
            connections.close_all()  # this thread's

    async def aflush(self) -> None:
        """:meth:`flush` from a coroutine: the database work runs where the ORM may run
        (asgiref's thread-sensitive thread), and the event loop goes on meanwhile."""
        await sync_to_async(self.flush, thread_sensitive=True)()


def in_event_loop() -> bool:
    """Whether this thread runs an event loop, where Django's ORM refuses to run (unless
    ``DJANGO_ALLOW_ASYNC_UNSAFE`` is set, as Django reads it)."""
    if os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE"):
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _gone(urls: dict[str, bool]) -> list[str]:
    return [url for url, is_gone in urls.items() if is_gone]


def _dispatch(
    urls: list[str],
    *,
    gone: list[str] | None = None,
    response: HttpResponseBase | None = None,
    after_response: bool = False,
    unit: str,
) -> None:
    if not urls:
        return
    if gone is None:
        gone = [url for url in urls if isinstance(url, GoneURL)]
    try:
        from .dispatch import dispatch

        logger.debug("IndexNow flush unit=%s count=%d", unit, len(urls))
        dispatch(urls, gone=gone, response=response, after_response=after_response)
    except Exception:
        logger.exception("IndexNow could not flush unit=%s count=%d", unit, len(urls))


_current: contextvars.ContextVar[Collector | None] = contextvars.ContextVar(
    "indexnow_collector", default=None
)


def current() -> Collector | None:
    """The collector of the unit of work running in this context, if any."""
    return _current.get()


@contextlib.contextmanager
def unit(kind: str, *, hold: float | None = None) -> Iterator[Collector]:
    """A fresh collector for the block; it is *not* flushed here (the caller flushes)."""
    collector = Collector(kind, hold=hold)
    token = _current.set(collector)
    try:
        yield collector
    finally:
        _current.reset(token)
        collector.open = False


class batch:
    """Collect the URLs that the block produces and flush them once at its end.

    The block gets a fresh collector even inside another unit of work; URLs of
    a transaction still open when the block ends are flushed when it commits.
    In a coroutine, ``async with batch():`` flushes without holding up the event
    loop (the URLs are worked out and dispatched in asgiref's thread-sensitive
    thread, where the ORM may run); a plain ``with batch():`` there flushes in a
    thread of its own while the loop waits.
    """

    def __init__(self) -> None:
        self._collector: Collector | None = None
        self._token: contextvars.Token[Collector | None] | None = None

    def __call__(self, func: Callable[_P, _R]) -> Callable[_P, _R]:
        """As a decorator (``@batch()``): each call of ``func`` is a block of its own."""

        @functools.wraps(func)
        def in_batch(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with batch():
                return func(*args, **kwargs)

        return in_batch

    def __enter__(self) -> Collector:
        collector = self._collector = Collector("batch")
        self._token = _current.set(collector)
        return collector

    def _left(self) -> None:
        collector, token = self._collector, self._token
        assert collector is not None and token is not None, "batch() block not entered"
        with contextlib.suppress(ValueError):  # left in another context than entered
            _current.reset(token)
        collector.open = False

    def __exit__(self, *exc_info: object) -> None:
        try:
            assert self._collector is not None, "batch() block not entered"
            self._collector.flush()
        finally:
            self._left()

    async def __aenter__(self) -> Collector:
        return self.__enter__()

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            assert self._collector is not None, "batch() block not entered"
            await self._collector.aflush()
        finally:
            self._left()


def submit(urls: Iterable[str] | str) -> None:
    """Add ``urls`` (absolute, or paths joined to ``BASE_URL``) to the current unit of work.

    Inside a transaction on the default database they join when it commits;
    outside any unit of work they are sent when the transaction (or, in
    autocommit mode, this call) commits. Never raises.
    """
    if isinstance(urls, str):
        urls = [urls]
    collect(urls)


def collect(urls: Iterable[str], using: str | None = None, *, gone: Collection[str] = ()) -> None:
    """Hand ``urls`` to the current unit of work, following the transaction on ``using``.

    ``gone``: those of ``urls`` whose page is gone (see :class:`GoneURL`).
    """
    try:
        if not is_enabled():
            return
        gone = set(gone)
        urls = [GoneURL(url) if url in gone else _text(url) for url in urls]
        if urls:
            hand_over(urls, connections[using or DEFAULT_DB_ALIAS])
    except Exception:
        logger.exception("IndexNow could not collect URLs; they are not submitted")


def hand_over(urls: list[str], connection: BaseDatabaseWrapper) -> None:
    """:func:`collect` for a caller that checked ``ENABLED`` already (change tracking)."""
    collector = current()
    if connection.in_atomic_block:
        _Commit.of(connection).add(connection, collector, urls)
    elif collector is not None and collector.accepts():
        collector.add(urls)
    else:
        _dispatch(urls, unit="commit")


class CommitChanges(Protocol):
    """What change tracking hands over to the commit of a transaction (see
    :func:`changes_on_commit`)."""

    #: Its changes waiting for the commit, by model then by primary key (until the
    #: commit or a rollback).
    changes: dict[Any, Any]

    def collect(
        self, connection: BaseDatabaseWrapper, resolve: Callable[[], list[str]], standing: Any
    ) -> None: ...


def changes_on_commit(
    connection: BaseDatabaseWrapper, *, start: bool, standing: Any = None
) -> CommitChanges | None:
    """What change tracking hands over to the commit of the transaction on ``connection``.

    ``start``: a change is about to be handed over (made when nothing waits for
    the commit yet); else ``None`` when nothing does. Its ``collect(resolve,
    standing)`` hands the URLs that ``resolve()`` gives (a list of strings, each
    a :class:`GoneURL` or a plain ``str``), called when the transaction commits,
    to the unit of work as :func:`collect` would hand them at this point;
    ``standing`` (a :class:`~.tracking.state.Standing`) tells whether the change
    still stands.
    """
    if start:
        # The commit the change handed over before went to, when it stands with this
        # one: the usual case, many changes in one transaction.
        last_standing, commit = _Commit.last
        if standing is last_standing and standing is not None and not commit.done:
            pieces = commit.pieces
            if pieces and pieces[-1][0] is standing:
                return commit
        return _Commit.of(connection, standing)
    found = _Commit._by_connection.get(connection)
    return found if found is not None and not found.done else None


class _Changes(list[Callable[[], list[str]]]):
    """Tracked changes handed over together: each gives its URLs when the transaction
    commits, in the order they were handed over."""

    __slots__ = ()

    def __call__(self) -> list[str]:
        urls: list[str] = []
        for resolve in self:
            try:
                urls.extend(resolve())
            except Exception:
                logger.exception("IndexNow could not work out URLs at commit")
        return urls


#: URLs, or a function giving them when the transaction commits.
_Piece = list[str] | Callable[[], list[str]]


class _Stands(Protocol):
    def stands(self) -> bool: ...


class _Commit:
    """The URLs registered during one outermost transaction on one connection.

    Each piece is registered with ``on_commit(..., robust=True)`` so that a
    rolled-back savepoint drops the pieces registered inside it (Django drops
    their callbacks). When the transaction commits, the first of the surviving
    callbacks to run hands *all* surviving pieces over: each joins its unit of
    work (or the one running at commit when its own has ended already) and the
    pieces without any unit are flushed together, once for the whole commit.
    Which pieces survived is asked of each piece's callback
    (:class:`~indexnow_django.compat.CommitCallback`).
    """

    _by_connection: weakref.WeakKeyDictionary[BaseDatabaseWrapper, _Commit] = (
        weakref.WeakKeyDictionary()
    )
    #: The standing of the last change handed over through :func:`changes_on_commit`
    #: and its commit (a standing belongs to one connection, which one thread uses).
    last: tuple[Any, _Commit]

    def __init__(self) -> None:
        #: Each piece: whether it still waits (its callback, or a tracked change's
        #: standing), its unit of work, its URLs.
        self.pieces: list[tuple[_Stands, Collector | None, _Piece]] = []
        self.done = False
        #: Change tracking's changes waiting for this commit, by model then primary key.
        self.changes: dict[Any, Any] = {}
        self.join = self.committed

    @classmethod
    def of(cls, connection: BaseDatabaseWrapper, standing: Any = None) -> _Commit:
        """The coming commit of ``connection``'s current transaction, made on first use.

        ``standing``: what is about to be handed over stands with it; when the last
        piece handed over does too, the commit is known to be alive.
        """
        commit = cls._by_connection.get(connection)
        if commit is not None and standing is not None and not commit.done:
            pieces = commit.pieces
            if pieces and pieces[-1][0] is standing:
                return commit
        if commit is None or commit.done or not (commit.alive() or commit.fresh()):
            commit = cls._by_connection[connection] = cls()
        if standing is not None:
            cls.last = (standing, commit)
        return commit

    def alive(self) -> bool:
        """Whether a piece still waits for the commit (dead pieces at the end are dropped,
        so that a transaction of many saves costs no more per save than one of few).
        """
        while self.pieces:
            if self.pieces[-1][0].stands():
                return True
            self.pieces.pop()
        return False

    def collect(
        self, connection: BaseDatabaseWrapper, resolve: Callable[[], list[str]], standing: Any
    ) -> None:
        # A callback in the savepoint (and a test's capture of callbacks) where each
        # change is handed over; whether it still waits is the change's standing's.
        on_commit_again(connection, self.join)
        unit = _current.get()
        pieces = self.pieces
        if pieces:
            last = pieces[-1]
            if last[0] is standing and last[1] is unit and type(last[2]) is _Changes:
                # With the changes before it that stand or fall with it, for the same
                # unit: one piece for them all (the usual: a transaction of many saves).
                last[2].append(resolve)
                return
        pieces.append((standing, unit, _Changes((resolve,))))

    def fresh(self) -> bool:
        """Whether nothing was handed to it yet (made for what is about to be)."""
        return not self.pieces and not self.changes

    def add(
        self, connection: BaseDatabaseWrapper, collector: Collector | None, urls: _Piece
    ) -> CommitCallback:
        def indexnow_join_on_commit() -> None:
            self.committed()

        callback = CommitCallback(connection, indexnow_join_on_commit)
        self.pieces.append((callback, collector, urls))
        return callback

    def committed(self) -> None:
        if self.done:
            return
        self.done = True
        pieces, self.pieces = self.pieces, []
        self.changes = {}
        running = current()
        if running is not None and not running.accepts():
            running = None
        leftovers = Collector("commit")
        # The URLs of consecutive pieces for one unit join it together, in their order.
        joining: list[str] = []
        unit: Collector | None = None
        last: Any = leftovers  # the unit of the piece before (none yet)
        for callback, collector, urls in pieces:
            if not callback.stands():
                continue  # rolled back with its savepoint
            if callable(urls):  # a change tracking works out now (strings, see collect)
                try:
                    urls = urls()
                except Exception:
                    logger.exception("IndexNow could not work out URLs at commit")
                    continue
            if collector is not last:
                last = collector
                target = collector if collector is not None and collector.accepts() else running
                if target is not unit:
                    if joining:
                        (unit or leftovers).add(joining)
                    joining = []
                    unit = target
            joining.extend(urls)
        if joining:
            (unit or leftovers).add(joining)
        leftovers.flush()


_Commit.last = (None, _Commit())
_Commit.last[1].done = True


def _text(url: object) -> str:
    """``url`` as a string, keeping a :class:`GoneURL` mark."""
    return url if isinstance(url, str) else str(url)


# Tasks -----------------------------------------------------------------------

#: The units of the ``django.tasks`` tasks running in this context, innermost last:
#: ``(task id, collector, token)``; a task an ImmediateBackend runs inside another nests.
_task_units: contextvars.ContextVar[
    tuple[tuple[str, Collector, contextvars.Token[Collector | None]], ...]
] = contextvars.ContextVar("indexnow_task_units", default=())


def _task_started(sender: Any, task_result: Any, **kwargs: Any) -> None:
    """A task starts: it gets a unit of work of its own, even inside another one."""
    _begin_task(str(task_result.id))


def _task_finished(sender: Any, task_result: Any, **kwargs: Any) -> None:
    """A task ended (successful or failed): flush its unit once."""
    _end_task(str(task_result.id))


def _begin_task(task_id: str) -> None:
    collector = Collector("task")
    token = _current.set(collector)
    _task_units.set((*_task_units.get(), (task_id, collector, token)))


def _end_task(task_id: str) -> None:
    units = _task_units.get()
    for index in range(len(units) - 1, -1, -1):
        if units[index][0] == task_id:
            _, collector, token = units[index]
            break
    else:
        return
    _task_units.set(units[:index])
    with contextlib.suppress(ValueError):  # ended in another context than begun
        _current.reset(token)
    collector.flush()


def connect_tasks() -> None:
    """Make every ``django.tasks`` task a unit of work, flushed when it ends, whichever
    backend runs it (a worker, the ImmediateBackend in a script), through the
    framework's ``task_started`` and ``task_finished`` signals."""
    from ..compat.tasks import tasks_framework

    framework = tasks_framework()
    if framework is None:
        return
    for module in framework.signal_modules:
        uid = f"indexnow_django.units.collector.{module.__name__}"
        module.task_started.connect(_task_started, dispatch_uid=f"{uid}.started")
        module.task_finished.connect(_task_finished, dispatch_uid=f"{uid}.finished")


def _celery_prerun(sender: Any = None, task_id: Any = None, **kwargs: Any) -> None:
    """A Celery task starts (a ``@shared_task`` of the site's, or the one that runs a
    ``django.tasks`` task, whose own unit then nests inside)."""
    _begin_task(f"celery:{task_id}")


def _celery_postrun(sender: Any = None, task_id: Any = None, **kwargs: Any) -> None:
    """A Celery task ended, whatever its state: flush its unit once."""
    _end_task(f"celery:{task_id}")


def connect_celery() -> None:
    """Make every Celery task a unit of work, flushed when it ends, through Celery's
    ``task_prerun`` and ``task_postrun`` signals.

    Only in a process that imported Celery before Django started: a Celery worker
    always has (``celery worker`` loads its app, and the app starts Django), and so
    has a web process with the usual ``from .celery import app`` in the project's
    package. Anywhere else tasks do not run, and importing Celery's signals would
    cost every process start a tenth of a second.
    """
    import sys

    if "celery" not in sys.modules:
        return
    from celery import signals as celery_signals

    uid = "indexnow_django.units.collector.celery"
    celery_signals.task_prerun.connect(_celery_prerun, weak=False, dispatch_uid=f"{uid}.prerun")
    celery_signals.task_postrun.connect(_celery_postrun, weak=False, dispatch_uid=f"{uid}.postrun")
