"""Connecting: the signal handlers and class hooks follow what the registry tracks.

The saves of every tracked model (registered, or a subclass of a registered
one) go through its class's ``save_base`` (:func:`.save.saving_hook`); its
raw saves, while a ``count_raw_saves()`` block is open, through ``pre_save``
and ``post_save``. Signal handlers are connected per sender: every tracked
model's deletes, the saves of the untracked parents of tracked multi-table
models (a save through the base class is worked out for the most specific
tracked class whose row it belongs to, see :data:`~.state.children`), the
rows of their ``related`` models, and the ``through`` models of their m2m
fields. Late registrations and models created later are hooked and connected
when they appear.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.apps import apps
from django.db import models
from django.db.models.signals import (
    class_prepared,
    m2m_changed,
    post_delete,
    post_save,
    pre_delete,
    pre_save,
)

from ..registration.registry import Related, plan_for, registration_changed
from .delete import after_delete, before_delete
from .loading import patch_tracked_classes
from .m2m import m2m_fields, on_m2m_changed, through_of
from .raw import follow_deserializers, follow_reversion, when_counting
from .related import after_row_change, before_row_change, owners
from .save import (
    after_raw_save,
    after_save,
    before_raw_save,
    before_save,
    mark_raw,
    outermost,
    saving_hook,
)
from .state import ModelInfo, children, model_info, planned, tracked

__all__ = ["connect"]

_Handler = Callable[..., None]

_SAVE: tuple[tuple[Any, _Handler, str], ...] = (
    (pre_save, before_save, "pre_save"),
    (post_save, after_save, "post_save"),
)
_DELETE: tuple[tuple[Any, _Handler, str], ...] = (
    (pre_delete, before_delete, "pre_delete"),
    (post_delete, after_delete, "post_delete"),
)

_ROWS: tuple[tuple[Any, _Handler, str], ...] = (
    (pre_save, before_row_change, "related_pre_save"),
    (post_save, after_row_change, "related_post_save"),
    (pre_delete, before_row_change, "related_pre_delete"),
    (post_delete, after_row_change, "related_post_delete"),
)

_connected: set[tuple[Any, str]] = set()


def _uid(sender: type[models.Model], name: str) -> str:
    return f"indexnow_django.tracking.{name}.{sender._meta.label_lower}"


def connect() -> None:
    """Start tracking (the app's ``ready()`` calls this); later changes are followed."""
    registration_changed.connect(_sync, dispatch_uid="indexnow_django.tracking.sync")
    class_prepared.connect(_prepared, dispatch_uid="indexnow_django.tracking.class_prepared")
    follow_reversion()
    follow_deserializers(mark_raw)
    when_counting(_follow_raw_saves)
    _sync()


def _follow_raw_saves(counting: bool) -> None:
    """While a block of ``count_raw_saves()`` is open (in any thread), the raw saves of
    tracked classes are followed through their signals: Django's deserializers save
    with ``Model.save_base`` itself, which the classes' hooks do not see."""
    for signal, handler, name in (
        (pre_save, before_raw_save, "pre"),
        (post_save, after_raw_save, "post"),
    ):
        uid = f"indexnow_django.tracking.raw_{name}_save"
        if counting:
            signal.connect(handler, weak=False, dispatch_uid=uid)
        else:
            signal.disconnect(dispatch_uid=uid)


def _prepared(sender: type[models.Model], **kwargs: Any) -> None:
    """``class_prepared``: a model created after start-up (a subclass of a tracked one)."""
    if sender._meta.apps is apps and plan_for(sender) is not None:
        _sync(extra=sender)


def _judged_apart(child: type[models.Model], parent: type[models.Model]) -> bool:
    """Whether an object of ``parent`` whose row is a ``child``'s must be judged as a
    ``child``: the parent is untracked, or the child has a registration of its own or
    URLs of its own (its own ``get_absolute_url``). Otherwise both give the same URLs,
    and a save or delete through the parent asks the database nothing more."""
    parent_plan = plan_for(parent)
    return (
        parent_plan is None
        or plan_for(child) is not parent_plan
        or getattr(child, "get_absolute_url", None) is not getattr(parent, "get_absolute_url", None)
    )


def _sync(extra: type[models.Model] | None = None, **kwargs: Any) -> None:
    """Connect the handlers to what the registry tracks now, and only to that."""
    if not apps.models_ready:
        return
    found: dict[type[models.Model], ModelInfo] = {}
    parents: dict[type[models.Model], list[type[models.Model]]] = {}
    rows: dict[type[models.Model], list[tuple[type[models.Model], Related]]] = {}
    wanted: dict[tuple[Any, str], tuple[Any, _Handler]] = {}
    models_now = apps.get_models()
    if extra is not None and extra not in models_now:
        models_now.append(extra)
    for model in models_now:
        if plan_for(model) is None:
            continue
        found[model] = model_info(model)
        # Its saves: through its class's save_base (patch_tracked_classes).
        for signal, handler, name in _DELETE:
            wanted[(model, name)] = (signal, handler)
        plan = plan_for(model)
        for related in plan.related if plan is not None else ():
            rows.setdefault(related.model, []).append((model, related))
            for signal, handler, name in _ROWS:
                wanted[(related.model, name)] = (signal, handler)
        for field in m2m_fields(model):
            wanted[(through_of(field), "m2m_changed")] = (m2m_changed, on_m2m_changed)
        if not model._meta.proxy:
            for parent in model._meta.get_parent_list():
                if _judged_apart(model, parent):
                    parents.setdefault(parent, []).append(model)
    for parent, below in parents.items():
        below.sort(key=lambda m: len(m._meta.get_parent_list()), reverse=True)
        if plan_for(parent) is None:
            for signal, handler, name in _SAVE:
                wanted[(parent, name)] = (signal, handler)
    for model, info in found.items():
        # What the save handlers ask of each save, worked out once.
        plan = plan_for(model)
        assert plan is not None
        plain = not plan.has_dependents and model not in parents
        found[model] = planned(info, plan, plain)
    signals = {name: signal for signal, _handler, name in (*_SAVE, *_DELETE, *_ROWS)}
    signals["m2m_changed"] = m2m_changed
    for sender, name in _connected - set(wanted):
        signals[name].disconnect(sender=sender, dispatch_uid=_uid(sender, name))
    for (sender, name), (signal, handler) in wanted.items():
        signal.connect(handler, sender=sender, weak=False, dispatch_uid=_uid(sender, name))
    _connected.clear()
    _connected.update(wanted)
    tracked.clear()
    tracked.update(found)
    patch_tracked_classes(found, saving_hook, outermost)
    children.clear()
    children.update(parents)
    owners.clear()
    owners.update(rows)
