"""Loading: tracked classes keep the row each of their objects was loaded with.

Only the tracked classes are changed (as a field tracker patches the class it
is declared on): their ``from_db``, through which every object loaded by a
query passes, and their ``refresh_from_db``. Untracked models pay nothing.
Nothing is copied on load: the object's :class:`~.state.TrackedState` keeps
a reference to the row's values (the row's own sequence in the order of the
model's concrete fields, or a dict by attname when fields were deferred).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.db import models
from django.utils.inspect import func_accepts_kwargs, func_supports_parameter

from ..compat import keep_state
from .state import MISSING, ModelInfo, TrackedState, plain_from_db, remember, tracked

__all__ = ["patch_tracked_classes"]

#: What each patched class had of its own before, by (class, attribute): MISSING if nothing.
_patched: dict[tuple[type[models.Model], str], Any] = {}
#: The ``from_db`` hooks in place: what each calls, and the mutable fields it copies.
_loading_hooks: dict[Callable[..., Any], tuple[Callable[..., models.Model], frozenset[str]]] = {}
#: The ``refresh_from_db`` hooks in place.
_refresh_hooks: set[Callable[..., Any]] = set()


def patch_tracked_classes(classes: Mapping[type[models.Model], ModelInfo]) -> None:
    """Hook ``from_db`` and ``refresh_from_db`` of ``classes`` (and only theirs).

    Undoes the previous hooks first, so the hooked classes follow the registry.
    A model's own ``from_db`` (a documented override) is kept and called; a
    subclass inherits its parent's hooks.
    """
    for (cls, name), own in _patched.items():
        if own is MISSING:
            delattr(cls, name)
        else:
            setattr(cls, name, own)
    _patched.clear()
    _loading_hooks.clear()
    _refresh_hooks.clear()
    plain_from_db.clear()
    for cls in sorted(classes, key=lambda c: len(c.__mro__)):
        loader = getattr(cls.from_db, "__func__")  # noqa: B009 (the function of the classmethod)
        mutable = classes[cls].mutable
        inherited = _loading_hooks.get(loader)
        plain_from_db[cls] = inherited[0] if inherited is not None else loader
        if inherited is None:
            _patch(cls, "from_db", classmethod(_loading_hook(loader, mutable)))
        elif inherited[1] != mutable:
            _patch(cls, "from_db", classmethod(_loading_hook(inherited[0], mutable)))
        refresh = cls.refresh_from_db
        if refresh not in _refresh_hooks:
            _patch(cls, "refresh_from_db", _refresh_hook(refresh))


def _patch(cls: type[models.Model], name: str, value: Any) -> None:
    _patched[(cls, name)] = cls.__dict__.get(name, MISSING)
    setattr(cls, name, value)


def _loading_hook(
    loader: Callable[..., models.Model], mutable: frozenset[str]
) -> Callable[..., models.Model]:
    """``from_db`` that calls ``loader`` (the class's own, or Django's) and keeps the row."""
    # Django 6.1 passes ``fetch_mode=``; a model's own older override may not take
    # it, and then it is not passed on (Django itself does the same).
    if mutable or not func_supports_parameter(loader, "fetch_mode"):
        passes_options = func_accepts_kwargs(loader) or func_supports_parameter(
            loader, "fetch_mode"
        )

        def hook(
            cls: type[models.Model], db: str | None, field_names: Any, values: Any, **options: Any
        ) -> models.Model:
            obj = (
                loader(cls, db, field_names, values, **options)
                if passes_options
                else loader(cls, db, field_names, values)
            )
            if mutable:
                # Values that can change in place (JSON): a copy, or "before" would follow them.
                values = [
                    copy.deepcopy(v) if n in mutable else v
                    for n, v in zip(field_names, values, strict=False)
                ]
            if len(values) != len(cls._meta.concrete_fields):
                values = dict(zip(field_names, values, strict=True))
            keep_state(obj, TrackedState(id(obj), values))
            return obj

        _loading_hooks[hook] = (loader, mutable)
        return hook

    # The common case, on every page that lists tracked objects: no options to pack.
    def from_db(
        cls: type[models.Model],
        db: str | None,
        field_names: Any,
        values: Any,
        *,
        fetch_mode: Any = None,
    ) -> models.Model:
        obj = loader(cls, db, field_names, values, fetch_mode=fetch_mode)
        if len(values) != len(cls._meta.concrete_fields):
            values = dict(zip(field_names, values, strict=True))
        keep_state(obj, TrackedState(id(obj), values))
        return obj

    _loading_hooks[from_db] = (loader, mutable)
    return from_db


def _refresh_hook(refresh: Callable[..., None]) -> Callable[..., None]:
    """``refresh_from_db`` that keeps the refreshed values as the object's row."""

    def refresh_from_db(self: models.Model, *args: Any, **kwargs: Any) -> None:
        refresh(self, *args, **kwargs)
        if type(self) in tracked:
            names = kwargs.get("fields", args[1] if len(args) > 1 else None)
            fields: Iterable[models.Field[Any, Any]] = self._meta.concrete_fields
            if names is not None:
                names = set(names)
                fields = [f for f in fields if f.name in names or f.attname in names]
            remember(self, [f.attname for f in fields])

    _refresh_hooks.add(refresh_from_db)
    return refresh_from_db
