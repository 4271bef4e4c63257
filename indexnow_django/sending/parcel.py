"""What one delivery carries (:class:`Parcel`) and who is running it (:class:`Runner`).

A parcel is the whole of a delivery's input, as plain data: the URLs, which of
them are gone, the batch id (which says when the URLs were flushed), the attempt,
the engines, whether the debounce store is ignored and the throttle's slot. Every
transport carries it the same way (:meth:`Parcel.call` gives the arguments of
a job or a task, :meth:`Parcel.from_call` reads them back), so no list of
these names is written twice.

A runner is what the sending core would otherwise ask of rq or of a task
framework: the id of the job or task that runs the parcel (kept in the
history), its queue, and the debounce store's claim holder. The transport that
runs a parcel says so with :func:`running`; a parcel sent from a web process or
a command has no runner.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["Parcel", "Runner", "current_runner", "holder_alive", "new_batch_id", "running"]


def new_batch_id(at: float | None = None) -> str:
    """A short id that a flush, its deliveries and their retries share in logs and the history.

    Its first 10 hex digits are the time of the flush (``at``, a Unix time, else now) in
    hundredths of a second, the other 6 random: the flush time travels with every job of
    the batch (see :func:`indexnow_django.sending.history.flushed_at`).
    """
    return f"{int((time.time() if at is None else at) * 100):010x}{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class Parcel:
    """The URLs of one delivery and everything that goes with them (see the module)."""

    urls: tuple[str, ...]
    batch_id: str
    #: Those of ``urls`` whose page is gone (unpublished, deleted).
    gone: frozenset[str] = frozenset()
    attempt: int = 1
    #: Engine endpoints (or names) to send to; ``None``: every configured engine.
    engines: tuple[str, ...] | None = None
    #: Ignore the debounce store.
    force: bool = False
    #: The throttle's slot (a Unix time) already taken for the first POST.
    slot: float | None = None

    @classmethod
    def of(
        cls,
        urls: Iterable[str],
        *,
        batch_id: str | None = None,
        gone: Iterable[str] = (),
        **options: Any,
    ) -> Parcel:
        """A parcel of ``urls``; ``gone`` is narrowed to the URLs it carries."""
        carried = tuple(str(url) for url in urls)
        named = set(gone)
        return cls(
            carried,
            batch_id or new_batch_id(),
            frozenset(url for url in carried if url in named),
            **options,
        )

    def part(
        self,
        urls: Sequence[str],
        *,
        engines: Sequence[str] | None = None,
        attempt: int | None = None,
        slot: float | None = None,
    ) -> Parcel:
        """A later delivery of some of this parcel's URLs (a retry, a held or left POST)."""
        return replace(
            self,
            urls=tuple(urls),
            gone=self.gone.intersection(urls),
            engines=tuple(engines) if engines is not None else self.engines,
            attempt=self.attempt if attempt is None else attempt,
            slot=slot,
        )

    def call(self) -> tuple[tuple[list[str]], dict[str, Any]]:
        """The positional and keyword arguments of a job or task carrying this parcel:
        plain data (lists of strings, numbers, a bool) that pickles and JSON keep alike."""
        kwargs: dict[str, Any] = {
            "batch_id": self.batch_id,
            "attempt": self.attempt,
            "force": self.force,
        }
        if self.gone:
            kwargs["gone"] = [url for url in self.urls if url in self.gone]
        if self.engines is not None:
            kwargs["engines"] = list(self.engines)
        if self.slot is not None:
            kwargs["slot"] = float(self.slot)
        return (list(self.urls),), kwargs

    @classmethod
    def from_call(cls, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Parcel:
        """The parcel a job's or task's arguments carry (see :meth:`call`)."""
        engines = kwargs.get("engines")
        slot = kwargs.get("slot")
        return cls.of(
            args[0],
            batch_id=str(kwargs.get("batch_id") or "") or None,
            gone=kwargs.get("gone") or (),
            attempt=int(kwargs.get("attempt") or 1),
            engines=tuple(engines) if engines is not None else None,
            force=bool(kwargs.get("force", False)),
            slot=float(slot) if slot is not None else None,
        )

    def __len__(self) -> int:
        return len(self.urls)


@dataclass(frozen=True)
class Runner:
    """The job or task running a parcel: ``kind`` (``"job"``, ``"task"``), its id and queue."""

    kind: str
    id: str
    queue: str = ""

    @property
    def holder(self) -> str:
        """The debounce store's name for the claims this runner makes."""
        return f"{self.kind}:{self.id}"


_runner: contextvars.ContextVar[Runner | None] = contextvars.ContextVar(
    "indexnow_runner", default=None
)

#: Per runner kind, how to tell whether a runner of that kind (by id) still runs; the
#: transports add theirs (see :func:`holder_alive`).
LIVENESS: dict[str, Callable[[str], bool]] = {}


@contextlib.contextmanager
def running(runner: Runner) -> Iterator[None]:
    """The block runs ``runner``'s parcel: the history and the debounce store name it."""
    token = _runner.set(runner)
    try:
        yield
    finally:
        _runner.reset(token)


def current_runner() -> Runner | None:
    """The runner of the parcel being delivered here, if a transport said so."""
    return _runner.get()


def holder_alive(kind: str, runner_id: str) -> bool:
    """Whether the runner ``kind:runner_id`` still runs; ``True`` when nothing can tell."""
    alive = LIVENESS.get(kind)
    return True if alive is None else alive(runner_id)
