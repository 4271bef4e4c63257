"""Raw saves: ignored (``loaddata``, fixtures), unless they restore data (a revert).

Django saves with ``raw=True`` what its deserializers build: ``loaddata``, the
fixtures of tests and migrations, a ``TransactionTestCase``'s serialized rollback.
Their rows are data being loaded, not pages that changed, and they submit
nothing. Tools that restore an object's earlier state through the same
deserializers (django-reversion's reverts) make a change like any save: inside
:func:`count_raw_saves` a raw save is tracked as a save (compared with the stored
row, or an insert when there is none), and so are the many-to-many data and the
``related`` rows it writes.

django-reversion's ``Version.revert()`` and ``Revision.revert()`` (which its admin's
revision and recover views call) run inside :func:`count_raw_saves` once the app
is ready (:func:`follow_reversion`), with no line of the site's own.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "count_raw_saves",
    "counting_raw_saves",
    "follow_deserializers",
    "follow_reversion",
    "when_counting",
]

_counting: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "indexnow_count_raw_saves", default=False
)

#: Blocks of :func:`count_raw_saves` open now, in every thread.
_open_blocks = 0
_blocks_lock = threading.Lock()
#: What is told when the first block opens (``True``) and the last one closes (``False``).
_observers: list[Callable[[bool], None]] = []


@contextlib.contextmanager
def count_raw_saves() -> Iterator[None]:
    """Track the raw saves of the block (objects rebuilt by a deserializer and saved
    with ``save()``, or ``save_base(raw=True)``) as ordinary saves: what they change
    is submitted, old and new URLs, following the change table."""
    token = _counting.set(True)
    _count_blocks(1)
    try:
        yield
    finally:
        _counting.reset(token)
        _count_blocks(-1)


def when_counting(observer: Callable[[bool], None]) -> None:
    """Call ``observer(True)`` when a block of :func:`count_raw_saves` opens while none
    is open (in any thread), and ``observer(False)`` when the last one closes."""
    if observer not in _observers:
        _observers.append(observer)


def _count_blocks(step: int) -> None:
    global _open_blocks
    with _blocks_lock:
        was_open = _open_blocks > 0
        _open_blocks += step
        if was_open != (_open_blocks > 0):
            for observer in _observers:
                observer(_open_blocks > 0)


def counting_raw_saves() -> bool:
    """Whether raw saves made now are tracked (inside :func:`count_raw_saves`)."""
    return _counting.get()


def ignored(raw: bool | None) -> bool:
    """Whether a save (or an m2m change) with this ``raw`` flag is left untracked."""
    return bool(raw) and not _counting.get()


def _counted(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def revert(*args: Any, **kwargs: Any) -> Any:
        with count_raw_saves():
            return method(*args, **kwargs)

    revert.indexnow_counted = True  # type: ignore[attr-defined]
    return revert


def follow_deserializers(mark_raw: Callable[[Any], None]) -> None:
    """Have ``mark_raw(obj)`` called before a deserializer saves ``obj`` outside
    :func:`count_raw_saves` (once).

    Django's deserializers save with ``Model.save_base`` itself, passing by the
    object's class, and set the object's many-to-many data right after: the mark
    tells tracking to ignore that data like the save.
    """
    from django.core.serializers.base import DeserializedObject

    method = DeserializedObject.save
    if getattr(method, "indexnow_marks_raw", False):
        return

    @functools.wraps(method)
    def save(self: DeserializedObject, *args: Any, **kwargs: Any) -> Any:
        if not _counting.get():
            mark_raw(self.object)
        return method(self, *args, **kwargs)

    save.indexnow_marks_raw = True  # type: ignore[attr-defined]
    DeserializedObject.save = save  # type: ignore[method-assign]


def follow_reversion() -> None:
    """Make django-reversion's reverts count, when it is installed (once)."""
    from django.apps import apps

    if not apps.is_installed("reversion"):
        return
    from reversion.models import Revision, Version

    for model in (Version, Revision):
        method = model.revert
        if not getattr(method, "indexnow_counted", False):
            model.revert = _counted(method)
