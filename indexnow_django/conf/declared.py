"""Every key of ``settings.INDEXNOW``, declared once.

Each key is one :class:`Key` on :class:`Declared`: where it sits in the
setting, its default, its kind and bounds, the check id and hint of its
problems, and the attribute of the settings object that holds it (the name it
is declared under). From these come :data:`DEFAULTS`, the checks of numbers,
booleans, choices and names (:meth:`Key.problems`), and the settings object's
attributes (:class:`~indexnow_django.conf.settings.IndexNowSettings` is a
:class:`Declared`). Keys whose checks need code (``KEY``, ``PREVIOUS_KEYS``,
``BASE_URL``, ``HOSTS``, ``ENGINES``) are of kind ``"code"``: their rules are
in :mod:`~indexnow_django.conf.rules`, with the checks that look at other
Django settings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload
from urllib.parse import urlsplit

from ..protocol.client import MAX_URLS_PER_POST, Engine, resolve_engine

T = TypeVar("T")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with ``settings.INDEXNOW``; ``id`` is the system check id."""

    id: str
    msg: str
    hint: str | None = None


NON_FINITE_HINT = "NaN and infinity are not allowed: give a finite number."
DISPATCH_MODES = ("auto", "queue", "sync", "tasks")
#: The transport class of each resolved ``DISPATCH`` value, by dotted path (a site that
#: never queues never imports rq's side).
TRANSPORTS = {
    "queue": "indexnow_django.transports.rq.RQTransport",
    "tasks": "indexnow_django.transports.tasks.TasksTransport",
    "sync": "indexnow_django.transports.sync.SyncTransport",
}


def where(*path: Any) -> str:
    """How a message names a setting: ``INDEXNOW['QUEUE']['TIMEOUT']``."""
    return "INDEXNOW" + "".join(f"[{part!r}]" for part in path)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Key(Generic[T]):
    """One key of ``INDEXNOW`` (``path``: ``"QUEUE.RESULT_TTL"``), and the attribute of the
    settings object (the name it is declared under) that holds its value, made by
    ``convert`` from what is set.

    ``kind``: ``"number"`` (finite, ``whole`` when asked, from ``minimum`` (``above``
    it when asked) to ``maximum``, in ``unit``), ``"flag"`` (True or False), ``"choice"``
    (one of ``choices``), ``"name"`` (a non-empty string, else ``message``), ``"url"``
    (an absolute http(s) URL) or ``"code"`` (checked in :mod:`.rules`). ``optional``:
    ``None`` is allowed too. ``id`` and ``hint``: those of its problems.
    """

    attr = ""
    minimum: float = 0
    maximum: float | None = None
    above = whole = optional = False
    unit: str | None = "seconds"
    choices: tuple[str, ...] = ()
    hint: str | None = None
    message = "{where} must be a non-empty string, not {value!r}."
    convert: Callable[[Any], Any] | None = None

    def __init__(self, path: str, default: Any, kind: str, id: str = "", **rule: Any) -> None:
        self.path, self.default, self.kind, self.id = tuple(path.split(".")), default, kind, id
        for name, value in rule.items():
            if not hasattr(Key, name):
                raise TypeError(f"Key() has no rule {name!r}")
            setattr(self, name, value)

    def __set_name__(self, owner: type, name: str) -> None:
        self.attr = name

    # The settings object holds the value in its own ``__dict__``: this (a non-data
    # descriptor) is only reached from the class, or by the type checker.
    @overload
    def __get__(self, obj: None, owner: type) -> Key[T]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> T: ...
    def __get__(self, obj: object | None, owner: type) -> Any:
        if obj is None:
            return self
        raise AttributeError(self.attr)

    def value(self, merged: dict[str, Any]) -> T:
        """This key's value in the merged settings, as the settings object holds it."""
        value = merged[self.path[0]] if len(self.path) == 1 else merged[self.path[0]][self.path[1]]
        converted: T = self.convert(value) if self.convert is not None else value
        return converted

    def problems(self, value: Any) -> Iterator[Problem]:
        """The problem with ``value`` for this key, if any (none for a key of kind code)."""
        kind = self.kind
        if kind == "code" or (value is None and self.optional):
            return
        if kind == "number":
            if not self._valid_number(value):
                yield self._number_problem(value)
        elif kind == "flag":
            if not isinstance(value, bool):
                yield self._problem(f"{{where}} must be True or False, not {value!r}.")
        elif kind == "choice":
            if value not in self.choices:
                allowed = ", ".join(map(repr, self.choices))
                yield self._problem(f"{{where}} must be one of {allowed}, not {value!r}.")
        elif kind == "name":
            if not isinstance(value, str) or not value:
                yield self._problem(self.message.replace("{value!r}", repr(value)))
        elif not is_absolute_url(value):  # "url"
            yield self._problem("{where} must be an absolute http(s) URL or None.")

    def _problem(self, message: str, hint: str | None = None) -> Problem:
        return Problem(self.id, message.replace("{where}", where(*self.path)), hint or self.hint)

    def _valid_number(self, value: Any) -> bool:
        """NaN and infinity are refused: they pass comparisons in surprising ways and
        break the arithmetic of delays and timeouts at run time."""
        low, high = self.minimum, self.maximum
        return (
            (is_whole(value) if self.whole else is_number(value))
            and math.isfinite(value)
            and (value > low if self.above else value >= low)
            and (high is None or value <= high)
        )

    def _number_problem(self, value: Any) -> Problem:
        low, high = self.minimum, self.maximum
        kind = "whole number" if self.whole else "number"
        of_unit = f" of {self.unit}" if self.unit else ""
        bounds = f"{'>' if self.above else '>='} {low:g}"
        if high is not None:
            bounds = f"from {low:g} to {high:g}"
        finite = not isinstance(value, float) or math.isfinite(value)
        message = f"{{where}} must be a {kind}{of_unit} {bounds}, not {value!r}."
        return self._problem(message, None if finite else NON_FINITE_HINT)


def is_absolute_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in {"http", "https"} and bool(parts.hostname)


def _engines(value: Any) -> tuple[Engine, ...]:
    return tuple(dict.fromkeys(resolve_engine(entry) for entry in value))


def number(path: str, default: Any, id: str, minimum: float = 0, **rule: Any) -> Key[Any]:
    return Key(path, default, "number", id, minimum=minimum, **rule)


# The check ids shared by several keys (docs/checks.md).
E_FLAG = "indexnow.E010"
E_QUEUE = "indexnow.E013"
E_RETRY = "indexnow.E015"
E_HISTORY = "indexnow.E019"
E_TASKS = "indexnow.E023"
E_CRAWL = "indexnow.E024"


class Declared:
    """The keys, in the order of the setting (the order the allowed keys are named in);
    each attribute is the value of the settings object built from them."""

    key: Key[str] = Key("KEY", None, "code")
    key_location: Key[str | None] = Key(
        "KEY_LOCATION",
        None,
        "url",
        "indexnow.E005",
        optional=True,
        hint="For example 'https://www.example.com/static/<KEY>.txt'.",
    )
    #: ``BASE_URL`` and ``HOSTS`` as set (``BASE_URL`` may be ``None``).
    base_url_setting: Key[str | None] = Key("BASE_URL", None, "code")
    hosts_setting: Key[Any] = Key("HOSTS", None, "code")
    engines: Key[tuple[Engine, ...]] = Key("ENGINES", ["indexnow"], "code", convert=_engines)
    enabled: Key[bool] = Key("ENABLED", True, "flag", E_FLAG)
    dry_run: Key[bool] = Key("DRY_RUN", False, "flag", E_FLAG)
    dispatch: Key[str] = Key("DISPATCH", "auto", "choice", "indexnow.E011", choices=DISPATCH_MODES)
    #: Whether every management command is a unit of work (read when Django starts).
    command_units: Key[bool] = Key("COMMAND_UNITS", True, "flag", E_FLAG)

    queue_name: Key[str] = Key(
        "QUEUE.NAME", "default", "name", E_QUEUE, message="{where} must be a queue name."
    )
    queue_delay: Key[float] = number("QUEUE.DELAY", 0, E_QUEUE)
    queue_timeout: Key[float] = number("QUEUE.TIMEOUT", 60, E_QUEUE, 1)
    queue_failure_ttl: Key[int] = number(
        "QUEUE.FAILURE_TTL",
        7 * 24 * 3600,
        E_QUEUE,
        1,
        whole=True,
        hint="It is how long rq keeps a failed job in its failed job registry; "
        "the default, 604800, is 7 days.",
    )
    #: Seconds rq keeps a finished delivery job and its result (0: not at all).
    queue_result_ttl: Key[int] = number(
        "QUEUE.RESULT_TTL",
        0,
        E_QUEUE,
        whole=True,
        hint="It is how long rq keeps a finished delivery job and its result; "
        "0, the default, removes it at once (the history is in the database).",
    )
    #: Seconds over which flushes are merged into one delivery (0: one job per flush).
    queue_coalesce: Key[float] = number(
        "QUEUE.COALESCE",
        2,  # DEFAULT of QUEUE["COALESCE"] (its hint and docs/configuration.md name it too)
        E_QUEUE,
        hint="2, the default, merges the flushes of every process within 2 seconds into one "
        "POST per host and engine; 0 sends each flush in a job of its own.",
    )
    # RETRY: read as ``retry``, the policy the five make.
    _retry_max_attempts: Key[int] = number(
        "RETRY.MAX_ATTEMPTS", 3, E_RETRY, 1, whole=True, unit=None
    )
    _retry_base_delay: Key[float] = number("RETRY.BASE_DELAY", 60, E_RETRY)
    _retry_multiplier: Key[float] = number("RETRY.MULTIPLIER", 2.0, E_RETRY, 1, unit=None)
    _retry_max_delay: Key[float] = number("RETRY.MAX_DELAY", 3600, E_RETRY)
    _retry_server_error_delay: Key[float] = number("RETRY.SERVER_ERROR_DELAY", 5, E_RETRY)
    max_urls: Key[int] = number(
        "BATCH.MAX_URLS",
        MAX_URLS_PER_POST,
        "indexnow.E016",
        1,
        maximum=MAX_URLS_PER_POST,
        whole=True,
        unit=None,
        hint="The IndexNow protocol accepts at most 10,000 URLs per request.",
    )
    debounce_cache: Key[str] = Key("DEBOUNCE.CACHE", "default", "code")
    debounce_ttl: Key[int] = number(
        "DEBOUNCE.TTL", 600, "indexnow.E017", whole=True, hint="0 disables debouncing."
    )
    http_timeout: Key[float] = number("HTTP.TIMEOUT", 10, "indexnow.E018", above=True)
    history_enabled: Key[bool] = Key("HISTORY.ENABLED", True, "flag", E_HISTORY)
    history_retention_days: Key[int] = number(
        "HISTORY.RETENTION_DAYS", 14, E_HISTORY, 1, whole=True, unit="days"
    )
    #: ``PREVIOUS_KEYS``: the main key's predecessors, still served.
    previous_keys: Key[tuple[str, ...]] = Key("PREVIOUS_KEYS", [], "code", convert=tuple)
    #: POSTs a minute per engine, ``None``: no limit.
    throttle_per_minute: Key[int | None] = number(
        "THROTTLE.MAX_REQUESTS_PER_MINUTE",
        60,  # DEFAULT of THROTTLE["MAX_REQUESTS_PER_MINUTE"] (docs/configuration.md names it too)
        "indexnow.E022",
        1,
        whole=True,
        unit=None,
        optional=True,
        hint="None sends without a limit.",
    )
    #: The ``django.tasks`` backend alias and queue of ``DISPATCH: "tasks"``.
    tasks_backend: Key[str] = Key("TASKS.BACKEND", "default", "name", E_TASKS)
    tasks_queue: Key[str] = Key("TASKS.QUEUE_NAME", "default", "name", E_TASKS)
    #: Render a public URL in-process before it is submitted.
    preflight_enabled: Key[bool] = Key("PREFLIGHT.ENABLED", False, "flag", E_FLAG)
    #: URLs on hosts that cannot be public are sent all the same (an intranet's own engine).
    allow_private_hosts: Key[bool] = Key("ALLOW_PRIVATE_HOSTS", False, "flag", E_FLAG)
    #: Crawl receipts (:mod:`indexnow_django.crawl`): off by default, see docs/crawl.md.
    crawl_enabled: Key[bool] = Key("CRAWL.ENABLED", False, "flag", E_FLAG)
    #: Days after an acceptance during which a crawler's fetch is looked for.
    crawl_days: Key[int] = number("CRAWL.DAYS", 7, E_CRAWL, 1, whole=True, unit="days")
    #: ``{crawler name: [CIDR, ...]}`` added to the shipped ranges.
    crawl_ranges: Key[dict[str, tuple[str, ...]]] = Key(
        "CRAWL.RANGES", {}, "code", convert=lambda value: {k: tuple(v) for k, v in value.items()}
    )
    #: The request header that carries the client's address behind a proxy (``None``:
    #: ``REMOTE_ADDR``).
    crawl_client_ip_header: Key[str | None] = Key("CRAWL.CLIENT_IP_HEADER", None, "code")
    #: The dotted path of the DNS resolver that verifies crawlers (``None``: the system's).
    crawl_resolver: Key[str | None] = Key("CRAWL.RESOLVER", None, "code")


#: Every key, in the order of the setting.
KEYS: tuple[Key[Any], ...] = tuple(v for v in vars(Declared).values() if isinstance(v, Key))


def _defaults() -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    for key in KEYS:
        if len(key.path) == 1:
            defaults[key.path[0]] = key.default
        else:
            defaults.setdefault(key.path[0], {})[key.path[1]] = key.default
    return defaults


#: ``settings.INDEXNOW`` when a site sets nothing but its key.
DEFAULTS: dict[str, Any] = _defaults()
#: The keys that hold a dict of their own.
NESTED: tuple[str, ...] = tuple(name for name, value in DEFAULTS.items() if isinstance(value, dict))
