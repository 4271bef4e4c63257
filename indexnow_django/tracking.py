"""Which models have public pages: ``register``, ``ModelIndexNow`` and discovery.

(Signal handlers that turn saves and deletes into URLs are added in this module.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import models
from django.utils.module_loading import autodiscover_modules

from .exceptions import RegistrationError

logger = logging.getLogger(__name__)

__all__ = ["ModelIndexNow", "autodiscover", "get_registration", "register", "registry"]


class ModelIndexNow:
    """How one model's objects map to public URLs. Subclass and ``register`` it."""

    #: Fields whose change makes a save worth submitting. ``None``: any change.
    fields: Sequence[str] | None = None
    #: Name of a datetime field holding the publication time. ``None``: none.
    publish_at: str | None = None

    def __init__(self, model: type[models.Model]) -> None:
        self.model = model

    def is_published(self, obj: Any) -> bool:
        """Whether ``obj`` is meant to be public (its ``publish_at`` aside)."""
        return True

    def urls(self, obj: Any) -> Sequence[str]:
        """The URLs (absolute, or paths joined to ``BASE_URL``) of ``obj``'s pages."""
        return [obj.get_absolute_url()]


registry: dict[type[models.Model], ModelIndexNow] = {}

_T = TypeVar("_T", bound=type[ModelIndexNow])


def register(model: type[models.Model], options: type[ModelIndexNow] | None = None) -> Any:
    """Register ``model``; usable plainly or as a class decorator.

    ``register(Post)`` uses every default; ``register(Post, PostIndexNow)`` or
    ``@register(Post)`` above a ``ModelIndexNow`` subclass sets the options.
    """
    if options is not None:
        _register(model, options)
        return options
    _register(model, ModelIndexNow)

    def decorator(cls: _T) -> _T:
        registry.pop(model, None)
        _register(model, cls)
        return cls

    return decorator


def _register(model: type[models.Model], options: type[ModelIndexNow]) -> None:
    if not (isinstance(model, type) and issubclass(model, models.Model)):
        raise RegistrationError(f"register() takes a model class, not {model!r}")
    if model._meta.abstract:
        raise RegistrationError(f"{model.__name__} is abstract and cannot be registered")
    if not (isinstance(options, type) and issubclass(options, ModelIndexNow)):
        raise RegistrationError(f"{options!r} is not a ModelIndexNow subclass")
    if model in registry:
        raise RegistrationError(f"{model._meta.label} is already registered with IndexNow")
    registry[model] = options(model)


def get_registration(model: type[models.Model]) -> ModelIndexNow | None:
    return registry.get(model)


def autodiscover() -> None:
    """Import every installed app's ``indexnow`` module, as the admin does with ``admin``."""
    autodiscover_modules("indexnow")


_Handler = Callable[..., None]
