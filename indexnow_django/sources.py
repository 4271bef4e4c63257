"""URLs to submit that come from the site itself: a registered model's public objects,
the locations of a sitemaps dict.

Each source yields :class:`~indexnow_django.entries.Entry` values that say
where a URL came from (``blog.Post pk=12``, ``sitemap 'blog' page 1``), lazily:
a model is read in chunks, a sitemap page at a time. A source that cannot be
read raises :class:`SourceError` with a message for the person who named it,
before it yields anything. ``manage.py indexnow_submit`` reads its ``--model``
and ``--sitemap`` options here.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.db.models import DateTimeField
from django.utils.module_loading import import_string

from .entries import Entry

if TYPE_CHECKING:
    from django.db.models import Model

    from .registry import ModelIndexNow

__all__ = ["MODEL_CHUNK_SIZE", "SourceError", "model_entries", "sitemap_entries"]

#: Rows fetched per database round trip from a model.
MODEL_CHUNK_SIZE = 2000


class SourceError(ValueError):
    """A model or sitemaps dict that cannot be read; the message names it and says why."""


@dataclass
class _SiteDomain:
    """What ``Sitemap.get_urls`` needs of a site: its domain (from ``BASE_URL``)."""

    domain: str
    name: str = ""


def model_entries(label: str, *, option: str = "--model") -> Iterator[Entry]:
    """The URLs of every public object of the registered model ``app_label.Model``."""
    from django.utils import timezone

    from . import tracking

    try:
        model = apps.get_model(label)
    except (LookupError, ValueError) as exc:
        raise SourceError(f"{option} {label}: no such model ({exc}).") from exc
    options = tracking.get_registration(model)
    if options is None:
        raise SourceError(
            f"{option} {label}: {model._meta.label} is not registered with IndexNow "
            "(register it in <app>/indexnow.py)."
        )
    return _public_entries(model, options, timezone.now())


def _public_entries(
    model: type[Model], options: ModelIndexNow, now: datetime.datetime
) -> Iterator[Entry]:
    from django.utils import timezone

    queryset = model._default_manager.all()
    if options.publish_at:
        # Objects to be published later are not public yet: the database
        # leaves them out, the registration decides about the rest.
        field = model._meta.get_field(options.publish_at)
        limit = now if isinstance(field, DateTimeField) else timezone.localdate(now)
        queryset = queryset.exclude(**{f"{options.publish_at}__gt": limit})
    origin = f"{model._meta.label} pk={{}}"
    for obj in queryset.order_by("pk").iterator(chunk_size=MODEL_CHUNK_SIZE):
        if options.is_public(obj, now):
            for url in options.urls(obj):
                yield Entry(str(url), origin, obj.pk, typed=False)


def sitemap_entries(dotted: str, base_url: str) -> Iterator[Entry]:
    """The locations (and alternates) of the sitemaps dict at ``dotted``, made absolute
    with ``base_url``'s scheme and host."""
    from urllib.parse import urlsplit

    from django.contrib.sitemaps import Sitemap

    try:
        found = import_string(dotted)
    except ImportError as exc:
        raise SourceError(f"--sitemap {dotted}: cannot import it ({exc}).") from exc
    if isinstance(found, Sitemap) or (isinstance(found, type) and issubclass(found, Sitemap)):
        found = {"": found}
    if not isinstance(found, Mapping):
        raise SourceError(
            f"--sitemap {dotted}: expected a dict of sitemaps (as given to "
            f"django.contrib.sitemaps.views.sitemap), got {type(found).__name__}."
        )
    base = urlsplit(base_url)
    return _sitemap_locations(dotted, found, base.netloc, base.scheme)


def _sitemap_locations(
    dotted: str, found: Mapping[str, Any], domain: str, scheme: str
) -> Iterator[Entry]:
    site = _SiteDomain(domain)
    for name, sitemap in found.items():
        if isinstance(sitemap, type):
            sitemap = sitemap()
        label = f"sitemap {name!r}" if name else f"sitemap {dotted}"
        for page in sitemap.paginator.page_range:
            origin = f"{label} page {{}}"
            for info in sitemap.get_urls(page=page, site=site, protocol=scheme):
                yield Entry(info["location"], origin, page, typed=False)
                for alternate in info.get("alternates") or ():
                    yield Entry(alternate["location"], origin, page, typed=False)
