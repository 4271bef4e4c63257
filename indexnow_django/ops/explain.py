"""What applies to one object, and why: the answer to "I saved it, why was nothing sent?".

:func:`explain` reads, and sends nothing: which registration (or the Wagtail
integration) covers the object, whether it is public now and why, its URLs
per language and host, whether each host is allowed and with which key and
key file, the debounce state per engine, a scheduled submission that waits,
the last deliveries from the history, and (with ``CRAWL["ENABLED"]``) the last
verified fetch of its URLs by each engine's crawler. It returns plain data (for
``manage.py indexnow_explain --json``), with a ``verdict``: the reasons, in
order, that a save of the object now would send nothing, or that it would.

A registration is asked for its URLs in each language of its ``url_languages()``
(every language on a site whose URLs are in ``i18n_patterns``, or its own
``languages``); otherwise in the current language.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Sequence
from typing import Any

from django.apps import apps
from django.db import models
from django.utils import timezone, translation

from ..conf import IndexNowSettings
from ..protocol.masking import mask_key, mask_url
from ..protocol.normalize import InvalidURL, foreign_host_reason, host_of, normalize_url
from ..registration.languages import in_language
from ..transports import chosen

__all__ = ["ExplainError", "explain"]

#: Deliveries from the history shown at most.
LAST_DELIVERIES = 5


class ExplainError(ValueError):
    """The model or the object cannot be found; the message says which."""


def explain(label: str, pk: str, conf: IndexNowSettings) -> dict[str, Any]:
    """What the module describes, for the object ``pk`` (as typed) of model ``label``."""
    model = _model(label)
    from django.core.exceptions import ObjectDoesNotExist

    try:
        key = model._meta.pk.to_python(pk)
        obj = model._default_manager.get(pk=key)
    except ObjectDoesNotExist:
        raise ExplainError(f"{model._meta.label} has no object with pk={pk}.") from None
    except Exception as exc:  # ValidationError, a pk the database refuses
        raise ExplainError(f"{model._meta.label}: {pk!r} is not a primary key ({exc}).") from exc
    now = timezone.now()
    report: dict[str, Any] = {
        "object": {"model": model._meta.label, "pk": str(obj.pk), "str": str(obj)},
        "enabled": conf.enabled,
        "dry_run": conf.dry_run,
        "dispatch": chosen(conf).name,
    }
    coverage = _coverage(model, obj, now)
    languages = coverage.pop("_languages")
    scheduled_at = coverage.pop("_scheduled_at", None)
    report.update(coverage)
    urls: list[dict[str, Any]] = []
    for language, found in languages.items():
        for raw in found:
            urls.append(_url(raw, language, conf))
    report["urls"] = urls
    unique = list(dict.fromkeys(u["url"] for u in urls if u["url"]))
    report["debounce"] = _debounce(unique, urls, conf)
    report["scheduled"] = _scheduled(model, obj, scheduled_at, conf)
    report["deliveries"] = _deliveries(unique, conf)
    report["crawled"] = _crawled(unique, conf)
    report["verdict"] = _verdict(report)
    return report


def _model(label: str) -> type[models.Model]:
    try:
        return apps.get_model(label)
    except (LookupError, ValueError) as exc:
        raise ExplainError(f"{label}: no such model ({exc}); give app_label.Model.") from exc


# --------------------------------------------------------------------------- coverage


def _coverage(
    model: type[models.Model], obj: models.Model, now: datetime.datetime
) -> dict[str, Any]:
    """The registration or integration that covers ``obj``, its public state, its URLs."""
    page = _wagtail_page(model)
    if page is not None:
        return _wagtail(obj, now)
    for app_config in apps.get_app_configs():  # an integration's own answer (django CMS's)
        hook = getattr(app_config, "indexnow_explain", None)
        found = hook(model, obj, now) if callable(hook) else None
        if found is not None:
            return dict(found)
    from .. import tracking

    options = tracking.get_registration(model)
    if options is None:
        return {
            "covered_by": None,
            "public": None,
            "why": [
                f"{model._meta.label} is not registered: register it in an indexnow.py of "
                "its app (or a parent model) for its saves to be submitted"
            ],
            "_languages": {},
        }
    registered_for = getattr(options, "model", model)
    covered_by = {
        "kind": "registration",
        "class": f"{type(options).__module__}.{type(options).__qualname__}",
        "model": registered_for._meta.label,
        "fields": list(options.fields) if options.fields is not None else None,
        "publish_at": options.publish_at,
    }
    why: list[str] = []
    published = bool(options.is_published(obj))
    why.append("is_published() is true" if published else "is_published() is false: not public")
    when = options.publish_time(obj)
    scheduled_at = None
    if options.publish_at:
        if when is None:
            why.append(f"{options.publish_at} is empty: no publication time, public when published")
        elif when > now:
            why.append(f"{options.publish_at} is {when.isoformat()}, in the future: not public yet")
            scheduled_at = when if published else None
        else:
            why.append(f"{options.publish_at} is {when.isoformat()}, past")
    public = bool(options.is_public(obj, now))
    languages: dict[str, list[str]] = {}
    for language in _languages(options):
        with in_language(obj, language) if language is not None else contextlib.nullcontext():
            if language is not None and not options.is_public(obj, now):
                languages[language] = []
                continue
            languages[language or ""] = (
                [str(url) for url in options.urls(obj)] if public or language is not None else []
            )
    # Public in some language (the reasons above are the current language's).
    public = public or any(languages.values())
    return {
        "covered_by": covered_by,
        "public": public,
        "why": why,
        "publish_at": when.isoformat() if when is not None else None,
        "_scheduled_at": scheduled_at,
        "_languages": languages,
    }


def _languages(options: Any) -> Sequence[str | None]:
    """The languages a registration's URLs are asked under (its ``url_languages()``: every
    language on a site with ``i18n_patterns``, see :mod:`.languages`), else the current
    language (``None``)."""
    url_languages = getattr(options, "url_languages", None)
    exposed = url_languages() if callable(url_languages) else None
    if exposed:
        return [str(code) for code in exposed]
    return [None]


def _wagtail_page(model: type[models.Model]) -> type[Any] | None:
    if not apps.is_installed("indexnow_django.contrib.wagtail"):
        return None
    from wagtail.models import Page

    return Page if issubclass(model, Page) else None


def _wagtail(obj: Any, now: datetime.datetime) -> dict[str, Any]:
    from ..contrib.wagtail.pages import PageURLs

    pages = PageURLs()
    why = ["live" if obj.live else "not live (a draft, or unpublished): not public"]
    if obj.go_live_at is not None:
        if obj.go_live_at > now:
            why.append(f"go_live_at is {obj.go_live_at.isoformat()}, in the future: not public yet")
        else:
            why.append(f"go_live_at is {obj.go_live_at.isoformat()}, past")
    if pages.is_private(obj):
        why.append("a view restriction (on it or an ancestor) makes it private: not public")
    public = pages.is_public(obj)
    urls = pages.urls(obj) if public else []
    if public and not urls:
        why.append("it is under no Wagtail site's root: it has no URL")
    return {
        "covered_by": {"kind": "wagtail", "integration": "indexnow_django.contrib.wagtail"},
        "public": public,
        "why": why,
        "publish_at": obj.go_live_at.isoformat() if obj.go_live_at else None,
        "_scheduled_at": None,
        "_languages": {translation.get_language() or "": urls},
    }


# --------------------------------------------------------------------------- URLs and hosts


def _url(raw: str, language: str, conf: IndexNowSettings) -> dict[str, Any]:
    entry: dict[str, Any] = {"language": language, "given": raw, "url": None}
    try:
        url = normalize_url(raw, conf.base_url)
    except InvalidURL as exc:
        entry["problem"] = f"not a URL that can be submitted: {exc}"
        return entry
    host = host_of(url)
    entry.update(url=url, host=host)
    host_conf = conf.host_config(host)
    if host_conf is None and conf.reread_hosts():
        host_conf = conf.host_config(host)
    if host_conf is None:
        entry["allowed"] = False
        entry["problem"] = foreign_host_reason(host, conf.hosts, conf.base_url)
        return entry
    entry.update(
        allowed=True,
        key=mask_key(host_conf.key),
        key_file=host_conf.masked_key_file_url,
        previous_keys=[mask_key(key) for key in host_conf.previous_keys],
    )
    return entry


def _debounce(
    urls: list[str], entries: list[dict[str, Any]], conf: IndexNowSettings
) -> list[dict[str, Any]]:
    """Per engine and URL: sent now, or left out until when (read only)."""
    from ..sending.history import last_accepted
    from ..sending.send import make_debounce

    store = make_debounce(conf)
    allowed = {e["url"] for e in entries if e.get("allowed")}
    states: list[dict[str, Any]] = []
    for engine in conf.engines:
        for url in urls:
            if url not in allowed:
                continue
            state: dict[str, Any] = {
                "engine": engine.name,
                "endpoint": mask_url(engine.endpoint),
                "url": url,
            }
            if not store.enabled:
                state["state"] = "debouncing is off (DEBOUNCE['TTL'] is 0)"
                state["debounced"] = False
            else:
                debounced = not store.filter_new(engine, [url])
                state["debounced"] = debounced
                last = last_accepted([url]).get(engine.name) if conf.history_enabled else None
                state["last_accepted"] = last.isoformat() if last else None
                if debounced:
                    again = (
                        (last + datetime.timedelta(seconds=conf.debounce_ttl)).isoformat()
                        if last
                        else None
                    )
                    state["sent_again_after"] = again
                    state["state"] = (
                        f"accepted recently: not sent again before {again}"
                        if again
                        else f"accepted within DEBOUNCE['TTL'] ({conf.debounce_ttl}s), or in "
                        "flight: not sent again yet"
                    )
                else:
                    state["state"] = "would be sent"
            states.append(state)
    return states


def _scheduled(
    model: type[models.Model],
    obj: models.Model,
    when: datetime.datetime | None,
    conf: IndexNowSettings,
) -> dict[str, Any] | None:
    """The scheduled submission that waits for the object's ``publish_at``, if any."""
    if when is None:
        return None
    from ..units.scheduling import Publication, whole_seconds

    publication = Publication(model._meta.label, obj.pk, whole_seconds(when))
    found: dict[str, Any] = {"at": publication.at.isoformat(), "job_id": publication.job_id}
    found["state"] = chosen(conf).publication_state(publication)
    return found


def _deliveries(urls: list[str], conf: IndexNowSettings) -> list[dict[str, Any]] | None:
    """The last POSTs that carried any of ``urls``, newest first; ``None`` without history."""
    if not conf.history_enabled or not urls:
        return None if not conf.history_enabled else []
    from ..models import Delivery
    from ..sending.history import with_urls

    rows = (
        with_urls(Delivery.objects.all(), urls)
        .order_by("-sent_at")
        .values(
            "sent_at",
            "engine",
            "host",
            "outcome",
            "status",
            "batch_id",
            "attempt",
            "url_count",
            "answer",
        )[:LAST_DELIVERIES]
    )
    return [{**row, "sent_at": row["sent_at"].isoformat()} for row in rows]


def _crawled(urls: list[str], conf: IndexNowSettings) -> list[dict[str, Any]] | None:
    """The last receipt of each crawler among ``urls``, newest first; ``None`` with crawl
    receipts off."""
    if not conf.crawl_enabled:
        return None
    from ..crawl.receipts import as_dict, last_fetches

    return [as_dict(receipt) for receipt in last_fetches(urls)] if urls else []


# --------------------------------------------------------------------------- verdict


def _verdict(report: dict[str, Any]) -> list[str]:
    """Why a save now would send nothing, or what it would send."""
    reasons: list[str] = []
    if not report["enabled"]:
        reasons.append("INDEXNOW['ENABLED'] is False: nothing is collected or sent")
    if report["covered_by"] is None:
        reasons.append("no registration covers the model")
    elif not report["public"]:
        reasons.append(
            "the object is not public now: a save sends nothing unless it was public before "
            "(then its old URLs are sent as gone)"
        )
    urls = report["urls"]
    if report["public"] and not urls:
        reasons.append("it is public but has no URL")
    refused = [u for u in urls if u.get("problem")]
    for entry in refused:
        reasons.append(f"{entry['given']}: {entry['problem']}")
    debounced = [d for d in report["debounce"] if d.get("debounced")]
    sendable = [d for d in report["debounce"] if not d.get("debounced")]
    for state in debounced:
        reasons.append(f"{state['url']} → {state['engine']}: {state['state']}")
    if report["dry_run"]:
        reasons.append("DRY_RUN is True: requests are logged, not sent")
    if sendable and report["enabled"] and report["public"]:
        verb = "logged (dry run)" if report["dry_run"] else "sent"
        reasons.append(
            f"a save now: {len({s['url'] for s in sendable})} URL(s) would be {verb} to "
            f"{', '.join(dict.fromkeys(s['engine'] for s in sendable))}"
        )
    return reasons
