"""Pages that derive from an object, and writes that send no signal.

:func:`watch` compares the URLs of given objects before and after a block
that writes without signals (treebeard's ``move()``, mptt's ``move_to()``, a
raw ``UPDATE``): each object is seen before the block, read again from the
database after it, and what changed is submitted. A registration's
``dependents(obj)`` names the objects whose URLs follow from an object (a
tree's descendants): a save of the object watches them the same way.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from django.db import models
from django.utils import timezone

from ..compat import thread_connection
from ..conf import is_enabled
from ..registration.registry import plan_for
from ..units.collector import GoneURL, hand_over
from .outcome import DRAFT, Seen, failed, see

if TYPE_CHECKING:
    from ..registration.registry import Plan

__all__ = ["Watch", "watch", "watched"]

#: The objects that the :func:`watch` blocks running in this context cover.
_watched: contextvars.ContextVar[frozenset[tuple[Any, Any]]] = contextvars.ContextVar(
    "indexnow_watched", default=frozenset()
)


def watched(instance: models.Model) -> bool:
    """Whether a :func:`watch` block running now covers ``instance``: its saves inside
    the block are the block's (a tree app saving a node halfway through a move)."""
    covered = _watched.get()
    return bool(covered) and (type(instance), instance.pk) in covered


class Watch:
    """The objects given, as they look now; :meth:`finish` submits what changed since."""

    def __init__(self, objects: Iterable[models.Model], using: str | None = None) -> None:
        self.using = using
        #: (model, pk) -> (plan, database alias, how it looked).
        self.before: dict[tuple[type[models.Model], Any], tuple[Plan, str, Seen]] = {}
        now = timezone.now()
        for obj in objects:
            plan = plan_for(type(obj))
            if plan is None or obj.pk is None:
                continue
            try:
                seen = see(plan, obj, now)
            except Exception as error:
                failed(obj, "work out the URLs of a watched object", error)
                continue
            db = obj._state.db or using or "default"
            self.before[(type(obj), obj.pk)] = (plan, db, seen)

    def finish(self) -> None:
        """Read the objects again and hand over the URLs that changed, old and new."""
        groups: dict[tuple[type[models.Model], str], list[Any]] = {}
        for (model, pk), (_plan, db, _seen) in self.before.items():
            groups.setdefault((model, db), []).append(pk)
        now = timezone.now()
        for (model, db), pks in groups.items():
            found = {obj.pk: obj for obj in model._base_manager.using(db).filter(pk__in=pks)}
            urls: list[str] = []
            for pk in pks:
                plan, _db, before = self.before[(model, pk)]
                obj = found.get(pk)
                try:
                    after = see(plan, obj, now) if obj is not None else DRAFT
                except Exception as error:
                    failed(obj, "work out the URLs of a watched object", error)  # type: ignore[arg-type]
                    continue
                if before == after:
                    continue
                urls.extend(after.urls)
                if before.public:
                    urls.extend(GoneURL(u) for u in before.urls if u not in after.urls)
            if urls:
                hand_over(urls, thread_connection(db))


@contextlib.contextmanager
def watch(objects: Iterable[models.Model], *, using: str | None = None) -> Iterator[None]:
    """Submit what a block changed of the URLs of ``objects`` (registered models' objects).

    ``objects`` is read when the block starts (a queryset is evaluated then)::

        with indexnow_django.watch([node, *node.get_descendants()]):
            node.move(target, "last-child")

    After the block each object is read again from the database; an object
    whose URLs or public state changed submits its new URLs and the old ones
    it lost, one that is gone its old ones. Saves of these objects inside the
    block are left to it. Inside a transaction the URLs join the unit of work
    when it commits. Nothing is submitted when the block raises.
    """
    if not is_enabled():
        yield
        return
    watching = Watch(list(objects), using)
    token = _watched.set(_watched.get() | frozenset(watching.before))
    try:
        yield
    finally:
        _watched.reset(token)
    watching.finish()
