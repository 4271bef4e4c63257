"""How fresh is the site in the engines' eyes: per registered model, over the last days, the
URLs flushed, accepted by every engine and how long after their flush, still not accepted
(with their last answer), and skipped by the preflight.

``manage.py indexnow_report`` prints :func:`freshness`; the admin's deliveries page shows
it too. Everything comes from the history (:class:`~indexnow_django.models.Delivery`):
each record carries the time its URLs were flushed (``flushed_at``, the same for every
attempt of a flush, from its batch id), so a URL accepted at its third attempt counts from
its flush, not from its last POST. A record without one (written before the flush time
was kept) counts from the first POST of its batch. With ``CRAWL["ENABLED"]``, each model
also tells, per engine, how many of the URLs it accepted a verified crawler fetched
afterwards, and how long after (:mod:`indexnow_django.crawl.report`).

A flushed URL is one URL of one flush (a batch id): a page saved twice in the period
counts twice. It is *accepted* once every engine that was sent it in that flush accepted
it (an engine that left it out as already accepted within ``DEBOUNCE["TTL"]`` is not
waited for); its delay is from the flush to the last of those acceptances. A URL is
*still not accepted* when an engine's last answer to it in the period was no acceptance:
it is counted and listed once, however many times it was flushed, with the last answer of
each engine that was sent it.

Which model a URL belongs to is worked out from the registered models' objects as they
are now (each public object's URLs, as ``indexnow_submit --model`` reads them) and from
the URLs installed apps list through an app config's ``indexnow_report_urls()`` (Wagtail
pages); a URL no current object has (a deleted object, a URL submitted by hand) is
counted under :data:`OTHER`.

Cost: one query over the period's records (indexed by ``flushed_at`` and ``sent_at``),
streamed; and one pass over the registered models' public objects.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from ..conf import IndexNowSettings, get_settings
from ..crawl.report import CrawlFigures

__all__ = ["OTHER", "Freshness", "ModelFreshness", "freshness", "percentile"]

#: The row of URLs that no registered model's current objects have.
OTHER = "other URLs"
#: URLs listed per model among those not accepted yet, and skipped.
LISTED = 20


def percentile(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile of ``values`` (``fraction`` 0.5 for the median)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class NotAccepted:
    """A URL still not accepted: its newest answer that was no acceptance (``engine``,
    ``answer``), and the last answer of each engine that was sent it (``answers``)."""

    url: str
    engine: str
    answer: str
    answers: dict[str, str]

    def describe(self) -> str:
        """``bing: 403 ...; indexnow: 200``, engines by name."""
        return "; ".join(f"{engine}: {answer}" for engine, answer in self.answers.items())

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "engine": self.engine,
            "last_answer": self.answer,
            "answers": dict(self.answers),
        }


@dataclass
class ModelFreshness:
    """The figures of one model (or :data:`OTHER`) over the period."""

    label: str
    flushed: int = 0
    accepted: int = 0
    delays: list[float] = field(default_factory=list, repr=False)
    #: The URLs still not accepted, the first :data:`LISTED`.
    not_accepted: list[NotAccepted] = field(default_factory=list)
    not_accepted_count: int = 0
    #: ``(url, reason)`` of the URLs the preflight held back, the first :data:`LISTED`.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    skipped_count: int = 0
    #: With ``CRAWL["ENABLED"]``: per engine, its acceptances and the crawlers' fetches.
    crawled: dict[str, CrawlFigures] | None = None

    @property
    def p50(self) -> float | None:
        return percentile(self.delays, 0.5)

    @property
    def p95(self) -> float | None:
        return percentile(self.delays, 0.95)

    def as_dict(self) -> dict[str, Any]:
        def seconds(value: float | None) -> float | None:
            return None if value is None else round(value, 3)

        return {
            "model": self.label,
            "flushed": self.flushed,
            "accepted": self.accepted,
            "p50_seconds": seconds(self.p50),
            "p95_seconds": seconds(self.p95),
            "not_accepted": self.not_accepted_count,
            "not_accepted_urls": [url.as_dict() for url in self.not_accepted],
            "skipped": self.skipped_count,
            "skipped_urls": [{"url": url, "reason": reason} for url, reason in self.skipped],
            **(
                {"crawled": [figures.as_dict(percentile) for figures in self.crawled.values()]}
                if self.crawled is not None
                else {}
            ),
        }


@dataclass
class Freshness:
    """The report: its period and one :class:`ModelFreshness` per model."""

    days: int
    since: datetime
    until: datetime
    models: list[ModelFreshness]

    def as_dict(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "models": [model.as_dict() for model in self.models],
        }


@dataclass
class _Flushed:
    """One URL of one flush, as the records tell it."""

    flushed_at: datetime | None
    #: Per engine: when it accepted the URL, or ``None`` while it has not.
    engines: dict[str, datetime | None] = field(default_factory=dict)
    skipped: str | None = None


@dataclass
class _Answer:
    """An engine's last answer to a URL in the period."""

    at: datetime
    accepted: bool
    text: str


def freshness(
    days: int = 7, *, conf: IndexNowSettings | None = None, now: datetime | None = None
) -> Freshness:
    """The report over the last ``days`` days; see the module."""
    from ..models import Delivery
    from ..sending.history import SKIPPED_ENGINE

    conf = conf or get_settings()
    now = now or timezone.now()
    since = now - timedelta(days=days)
    records = (
        Delivery.objects.filter(
            Q(flushed_at__gte=since) | Q(flushed_at__isnull=True, sent_at__gte=since)
        )
        .exclude(outcome=Delivery.Outcome.DRY_RUN)
        .order_by()
    )
    flushed: dict[tuple[str, str], _Flushed] = {}
    #: Per URL and engine, its last answer: what says whether the URL is still not accepted.
    answers: dict[str, dict[str, _Answer]] = {}
    first_post: dict[str, datetime] = {}
    rows = records.values_list(
        "batch_id", "engine", "outcome", "status", "answer", "sent_at", "flushed_at", "urls"
    )
    for batch_id, engine, outcome, status, answer, sent_at, flushed_at, urls in rows.iterator(
        chunk_size=500
    ):
        if flushed_at is None and (batch_id not in first_post or sent_at < first_post[batch_id]):
            first_post[batch_id] = sent_at
        skipped = outcome == Delivery.Outcome.SKIPPED or engine == SKIPPED_ENGINE
        accepted = outcome == Delivery.Outcome.ACCEPTED
        said = None if skipped else _Answer(sent_at, accepted, _answer(engine, status, answer))
        for url in urls.split(Delivery.URL_SEPARATOR):
            if not url:
                continue
            state = flushed.get((batch_id, url))
            if state is None:
                state = flushed[(batch_id, url)] = _Flushed(flushed_at)
            if said is None:
                state.skipped = answer
                continue
            if accepted:
                seen = state.engines.get(engine)
                if seen is None or sent_at < seen:
                    state.engines[engine] = sent_at
            else:
                state.engines.setdefault(engine, None)
            known = answers.setdefault(url, {}).get(engine)
            if known is None or sent_at >= known.at:
                answers[url][engine] = said
    owners = _owners({url for _, url in flushed}, conf)
    figures: dict[str, ModelFreshness] = {}

    def figures_of(url: str) -> ModelFreshness:
        label = owners.get(url, OTHER)
        model = figures.get(label)
        if model is None:
            model = figures[label] = ModelFreshness(label)
        return model

    for (batch_id, url), state in flushed.items():
        model = figures_of(url)
        model.flushed += 1
        if state.skipped is not None and not state.engines:
            model.skipped_count += 1
            if len(model.skipped) < LISTED:
                model.skipped.append((url, state.skipped))
            continue
        moments = state.engines.values()
        if state.engines and all(moment is not None for moment in moments):
            model.accepted += 1
            start = state.flushed_at or first_post.get(batch_id)
            if start is not None:
                last = max(moment for moment in moments if moment is not None)
                model.delays.append(max(0.0, (last - start).total_seconds()))
    # Still not accepted: an engine's last answer to the URL was no acceptance. Once per
    # URL, the most recently refused first.
    waiting: list[tuple[datetime, str, str]] = []
    for url, per_engine in answers.items():
        refused = {engine: said for engine, said in per_engine.items() if not said.accepted}
        if refused:
            engine = max(refused, key=lambda name: refused[name].at)
            waiting.append((refused[engine].at, url, engine))
    for _, url, engine in sorted(waiting, reverse=True):
        model = figures_of(url)
        model.not_accepted_count += 1
        if len(model.not_accepted) < LISTED:
            texts = {name: said.text for name, said in sorted(answers[url].items())}
            model.not_accepted.append(NotAccepted(url, engine, texts[engine], texts))
    if conf.crawl_enabled:
        from ..crawl.report import crawl_figures

        for model in figures.values():
            model.crawled = {}
        for label, crawled in crawl_figures(since, owners, OTHER).items():
            model = figures.setdefault(label, ModelFreshness(label))
            model.crawled = dict(sorted(crawled.items()))
    ordered = sorted(figures.values(), key=lambda m: (m.label == OTHER, m.label))
    return Freshness(days, since, now, ordered)


def _answer(engine: str, status: int | None, answer: str) -> str:
    from ..protocol.client import excerpt

    text = excerpt(answer.removeprefix(f"{engine} answered "), 120)
    code = str(status) if status is not None else "no answer"
    if not text:
        return code
    return text if status is None or code in text else f"{code} {text}"


def _owners(urls: set[str], conf: IndexNowSettings) -> dict[str, str]:
    """``{url: label}`` for those of ``urls`` that a registered model's public object (or
    an installed app's ``indexnow_report_urls()``) has now."""
    found: dict[str, str] = {}
    if not urls:
        return found
    for label, url in _current_urls(conf):
        if url in urls and url not in found:
            found[url] = label
            if len(found) == len(urls):
                break
    return found


def _current_urls(conf: IndexNowSettings) -> Iterator[tuple[str, str]]:
    from django.apps import apps

    from ..manual.sources import model_entries
    from ..protocol.normalize import InvalidURL, normalize_url
    from ..registration.registry import registry

    for model in sorted(registry, key=lambda model: model._meta.label):
        label = model._meta.label
        for entry in model_entries(label):
            if entry.problem is None:
                try:
                    yield label, normalize_url(entry.raw, conf.base_url)
                except InvalidURL:
                    continue
    for app_config in apps.get_app_configs():
        source = getattr(app_config, "indexnow_report_urls", None)
        if source is not None:
            found: Iterable[tuple[str, str]] = source()
            yield from found
