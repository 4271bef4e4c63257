"""indexnow-django: tell search engines which pages of a Django site changed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

__all__ = [
    "IndexNowQuerySet",
    "IndexNowQuerySetMixin",
    "ModelIndexNow",
    "__version__",
    "batch",
    "count_raw_saves",
    "register",
    "submit",
    "submit_objects",
    "watch",
]

if TYPE_CHECKING:
    from .registration.queryset import IndexNowQuerySet, IndexNowQuerySetMixin, submit_objects
    from .registration.registry import ModelIndexNow, register
    from .tracking.raw import count_raw_saves
    from .tracking.watch import watch
    from .units.collector import batch, submit

# The public names are imported lazily so that ``import indexnow_django`` (for
# instance from settings.py or the HTTP client) never imports Django models.
_LAZY = {
    "batch": "units.collector",
    "submit": "units.collector",
    "ModelIndexNow": "registration.registry",
    "register": "registration.registry",
    "IndexNowQuerySet": "registration.queryset",
    "IndexNowQuerySetMixin": "registration.queryset",
    "submit_objects": "registration.queryset",
    "watch": "tracking.watch",
    "count_raw_saves": "tracking.raw",
}


#: Modules gone from the package whose dotted paths are still stored: rq jobs of
#: publications scheduled by earlier builds name ``indexnow_django.scheduling.publish``; rq, not
#: finding the module, looks the path up as attributes of the package.
_STORED = {"scheduling": "jobs"}


def __getattr__(name: str) -> Any:
    from importlib import import_module

    if name in _STORED:
        return import_module(f"indexnow_django.{_STORED[name]}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'indexnow_django' has no attribute {name!r}")
    return getattr(import_module(f"indexnow_django.{module}"), name)
