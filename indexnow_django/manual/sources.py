"""URLs to submit that come from the site itself: a registered model's public objects,
the locations of a sitemaps dict.

Each source yields :class:`~indexnow_django.manual.entries.Entry` values that say
where a URL came from (``blog.Post pk=12``, ``sitemap 'blog' page 1``), lazily:
a model is read in chunks, a sitemap page at a time. A source that cannot be
read raises :class:`SourceError` with a message for the person who named it,
before it yields anything. ``manage.py indexnow_submit`` reads its ``--model``
and ``--sitemap`` options here.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.db.models import DateTimeField
from django.utils import timezone
from django.utils.module_loading import import_string

from .entries import Entry

if TYPE_CHECKING:
    from django.db.models import Model

    from ..registration.languages import LanguageState
    from ..registration.registry import ModelIndexNow

__all__ = [
    "MODEL_CHUNK_SIZE",
    "ChangedSince",
    "SourceError",
    "model_entries",
    "parse_changed_since",
    "sitemap_entries",
]

#: Rows fetched per database round trip from a model.
MODEL_CHUNK_SIZE = 2000


class SourceError(ValueError):
    """A model or sitemaps dict that cannot be read; the message names it and says why."""


@dataclass
class _SiteDomain:
    """What ``Sitemap.get_urls`` needs of a site: its domain (from ``BASE_URL``)."""

    domain: str
    name: str = ""


def model_entries(
    label: str, *, pks: Sequence[str] | None = None, option: str = "--model"
) -> Iterator[Entry]:
    """The URLs of every public object of the registered model ``app_label.Model``, or of
    the objects whose primary keys ``pks`` lists (as typed): each that does not exist or
    is not public is an entry with the reason, so that it is reported and counted."""
    from .. import tracking

    try:
        model = apps.get_model(label)
    except (LookupError, ValueError) as exc:
        raise SourceError(f"{option} {label}: no such model ({exc}).") from exc
    origin = f"{model._meta.label} pk={{}}"
    for app_config in apps.get_app_configs():  # an integration's own pages (django CMS's)
        hook = getattr(app_config, "indexnow_model_urls", None)
        found = hook(model, pks) if callable(hook) else None
        if found is not None:
            return (Entry(url, origin, pk, False, problem) for pk, url, problem in found)
    options = tracking.get_registration(model)
    if options is None:
        raise SourceError(
            f"{option} {label}: {model._meta.label} is not registered with IndexNow "
            "(register it in <app>/indexnow.py)."
        )
    if pks is not None:
        return _chosen_entries(model, options, pks, timezone.now())
    return _public_entries(model, options, timezone.now())


def _chosen_entries(
    model: type[Model], options: ModelIndexNow, pks: Sequence[str], now: datetime.datetime
) -> Iterator[Entry]:
    from django.core.exceptions import ValidationError

    origin = f"{model._meta.label} pk={{}}"
    wanted: dict[Any, str] = {}
    for typed in pks:
        try:
            wanted[model._meta.pk.to_python(typed)] = typed
        except ValidationError as exc:
            reason = "; ".join(exc.messages)
            raise SourceError(
                f"--pk {typed}: not a primary key of {model._meta.label} ({reason})."
            ) from exc
    found = model._default_manager.in_bulk(list(wanted))
    for pk, typed in wanted.items():
        obj = found.get(pk)
        if obj is None:
            yield Entry("", origin, typed, problem="no such object")
            continue
        states = options.urls_per_language(obj, now)
        if not any(state.public for state in states.values()):
            yield Entry("", origin, pk, problem=_why_not_public(options, states))
            continue
        for url in dict.fromkeys(url for state in states.values() for url in state.urls):
            yield Entry(url, origin, pk, typed=False)


def _why_not_public(options: ModelIndexNow, states: Mapping[str, LanguageState]) -> str:
    where = " in any language" if len(states) > 1 else ""
    if not any(state.published for state in states.values()):
        return f"not public{where}: is_published() is false"
    return f"not public yet{where}: {options.publish_at} is in the future"


def _public_entries(
    model: type[Model], options: ModelIndexNow, now: datetime.datetime
) -> Iterator[Entry]:
    queryset = model._default_manager.all()
    if options.publish_at:
        # Objects to be published later are not public yet: the database
        # leaves them out, the registration decides about the rest.
        field = model._meta.get_field(options.publish_at)
        limit = now if isinstance(field, DateTimeField) else timezone.localdate(now)
        queryset = queryset.exclude(**{f"{options.publish_at}__gt": limit})
    origin = f"{model._meta.label} pk={{}}"
    for obj in queryset.order_by("pk").iterator(chunk_size=MODEL_CHUNK_SIZE):
        # Every language the object is public in.
        for url in options.public_urls(obj, now):
            yield Entry(url, origin, obj.pk, typed=False)


def sitemap_entries(
    dotted: str, base_url: str, *, changed: ChangedSince | None = None
) -> Iterator[Entry]:
    """The locations (and alternates) of the sitemaps dict at ``dotted``, made absolute
    with ``base_url``'s scheme and host; with ``changed``, those it keeps."""
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
    return _sitemap_locations(dotted, found, base.netloc, base.scheme, changed)


def _sitemap_locations(
    dotted: str,
    found: Mapping[str, Any],
    domain: str,
    scheme: str,
    changed: ChangedSince | None,
) -> Iterator[Entry]:
    site = _SiteDomain(domain)
    for name, sitemap in found.items():
        if isinstance(sitemap, type):
            sitemap = sitemap()
        label = f"sitemap {name!r}" if name else f"sitemap {dotted}"
        for page in sitemap.paginator.page_range:
            origin = f"{label} page {{}}"
            for info in sitemap.get_urls(page=page, site=site, protocol=scheme):
                lastmod = info.get("lastmod")
                if changed is None or changed.keep(info["location"], lastmod):
                    yield Entry(info["location"], origin, page, typed=False)
                for alternate in info.get("alternates") or ():
                    if changed is None or changed.keep(alternate["location"], lastmod):
                        yield Entry(alternate["location"], origin, page, typed=False)


_DURATION = re.compile(r"([1-9][0-9]*)([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
LAST_ACCEPTED = "last-accepted"


def parse_changed_since(value: str, now: datetime.datetime) -> datetime.datetime | None:
    """The moment ``--changed-since`` names: ``30m``, ``12h``, ``1d``, ``2w`` before
    ``now``, a date (its midnight, local time) or a date and time (ISO 8601); ``None``
    for ``last-accepted``. Raises ``ValueError`` with a message for anything else."""
    text = value.strip()
    if text == LAST_ACCEPTED:
        return None
    match = _DURATION.fullmatch(text)
    if match:
        return now - datetime.timedelta(**{_UNITS[match[2]]: int(match[1])})
    try:
        if len(text) == 10:
            day = datetime.date.fromisoformat(text)
            return _aware(datetime.datetime.combine(day, datetime.time.min))
        return _aware(datetime.datetime.fromisoformat(text))
    except ValueError:
        raise ValueError(
            f"--changed-since {value}: give a duration (30m, 12h, 1d, 2w), a date "
            "(2026-12-01), a date and time (2026-12-01T08:00), or last-accepted."
        ) from None


def _aware(moment: datetime.datetime) -> datetime.datetime:
    """``moment``, in the current time zone when it is naive."""
    if timezone.is_naive(moment):
        return timezone.make_aware(moment, timezone.get_current_timezone())
    return moment


class ChangedSince:
    """Which sitemap locations ``--changed-since`` keeps: those whose ``lastmod`` is
    newer than ``since``, or, with ``accepted`` (``{url: when every engine last
    accepted it}``, from the history), newer than that moment or never accepted. A
    location without ``lastmod`` is kept: nothing says it did not change.
    :attr:`unchanged` counts the others."""

    def __init__(
        self,
        *,
        since: datetime.datetime | None = None,
        accepted: Mapping[str, datetime.datetime] | None = None,
        base_url: str = "",
    ) -> None:
        self.since = since
        self.accepted = accepted
        self.base_url = base_url
        self.unchanged = 0

    def keep(self, location: str, lastmod: Any) -> bool:
        if lastmod is None:
            return True
        if not isinstance(lastmod, datetime.datetime):
            lastmod = datetime.datetime.combine(lastmod, datetime.time.min)
        lastmod = _aware(lastmod)
        limit = self.since
        if self.accepted is not None:
            limit = self.accepted.get(self._normalized(location))
            if limit is None:  # never accepted (within the history's retention)
                return True
        if limit is not None and lastmod <= limit:
            self.unchanged += 1
            return False
        return True

    def _normalized(self, location: str) -> str:
        from ..protocol.normalize import InvalidURL, normalize_url

        try:
            return normalize_url(location, self.base_url)
        except InvalidURL:
            return location
