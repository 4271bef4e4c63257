"""``settings.INDEXNOW``: defaults, validation and the settings object.

Settings are read when used, never at import time, so ``override_settings``
always works: :func:`get_settings` builds a frozen :class:`IndexNowSettings`
from ``settings.INDEXNOW`` merged over :data:`DEFAULTS` (the user's dict is
never mutated) and caches it until the ``setting_changed`` signal says
``INDEXNOW``, ``RQ_QUEUES`` or ``CACHES`` changed.

:func:`validate` is the single place that knows what a valid value is; the
system checks (``checks.py``) report its problems and :func:`get_settings`
raises :class:`~indexnow_django.exceptions.IndexNowConfigError` on them.
"""

from __future__ import annotations

import copy
import difflib
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings as django_settings
from django.utils.module_loading import import_string

from .client import MAX_BATCH_SIZE, Engine, RetryPolicy, resolve_engine
from .exceptions import IndexNowConfigError
from .masking import mask_key, mask_keys
from .normalize import InvalidURL, normalize_host, normalize_url

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULTS",
    "HostConfig",
    "IndexNowSettings",
    "Problem",
    "clear_cache",
    "get_settings",
    "mask_key",
    "mask_keys",
    "settings_fingerprint",
    "validate",
]

#: Seconds a process keeps the hosts that come from code (``HOSTS`` as a dotted
#: path to a callable, an app config's ``indexnow_hosts()``) before it reads
#: them again: a tenant added at run time is served and submitted within that
#: time by every process, without a restart, for one call at most that often.
HOSTS_REFRESH_SECONDS = 5.0
#: Seconds, at least, between two reads of those hosts forced by a host not among them.
HOSTS_REREAD_SECONDS = 1.0

DEFAULTS: dict[str, Any] = {
    "KEY": None,
    "KEY_LOCATION": None,
    "BASE_URL": None,
    "HOSTS": None,
    "ENGINES": ["indexnow"],
    "ENABLED": True,
    "DRY_RUN": False,
    "DISPATCH": "auto",
    "QUEUE": {
        "NAME": "default",
        "DELAY": 0,
        "TIMEOUT": 60,
        "FAILURE_TTL": 7 * 24 * 3600,
        "RESULT_TTL": 0,
        "COALESCE": 0,
    },
    "RETRY": {
        "MAX_ATTEMPTS": 3,
        "BASE_DELAY": 60,
        "MULTIPLIER": 2.0,
        "MAX_DELAY": 3600,
        "SERVER_ERROR_DELAY": 5,
    },
    "BATCH": {"MAX_URLS": MAX_BATCH_SIZE},
    "DEBOUNCE": {"CACHE": "default", "TTL": 600},
    "HTTP": {"TIMEOUT": 10},
    "HISTORY": {"ENABLED": True, "RETENTION_DAYS": 14},
    "PREFLIGHT": {"ENABLED": False},
    "PREVIOUS_KEYS": [],
    "THROTTLE": {"MAX_REQUESTS_PER_MINUTE": 60},
    "TASKS": {"BACKEND": "default", "QUEUE_NAME": "default"},
}

DISPATCH_MODES = ("auto", "queue", "sync", "tasks")

KEY_RE = re.compile(r"^[A-Za-z0-9-]{8,128}$")

#: The keys printed in the documentation. A site that copied one instead of
#: making its own would publish a key anyone can read, so the checks refuse them
#: (``tests/test_docs.py`` keeps this list in step with the pages).
DOCUMENTED_KEYS = frozenset(
    {
        "0f5c1b2d3e4a5968778695a4b3c2d1e0",
        "9d8c7b6a5f4e3d2c",
        "9d8c7b6a5f4e3d2c1b0a",
        "main-key-0123456789",
        "blog-key-0123456789",
        "demo-key-5f2a9c7e1b3d4a6f",
    }
)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with ``settings.INDEXNOW``; ``id`` is the system check id."""

    id: str
    msg: str
    hint: str | None = None


@dataclass(frozen=True)
class HostConfig:
    """A host that URLs may be submitted for, with its key."""

    host: str
    key: str
    key_location: str | None
    #: The scheme the site is served with on this host: ``BASE_URL``'s for its
    #: host, https for the others.
    scheme: str = "https"
    #: Keys being rotated out: their key files are still served, nothing is sent with them.
    previous_keys: tuple[str, ...] = ()

    def serves(self, key: str) -> bool:
        """Whether ``/<key>.txt`` on this host answers with ``key``."""
        return key == self.key or key in self.previous_keys

    @property
    def key_file_url(self) -> str:
        """Where engines fetch the key file from."""
        return self.key_location or f"{self.scheme}://{self.host}/{self.key}.txt"

    @property
    def masked_key_file_url(self) -> str:
        """:attr:`key_file_url` as messages show it, the key masked."""
        return mask_keys(self.key_file_url, [self.key])


class _HostsMemo:
    """The hosts a settings object last resolved, and until when they hold."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.value: Mapping[str, HostConfig] | None = None
        self.expires = 0.0
        #: Nothing is read from code: the value holds for ever.
        self.static = False
        self.problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class IndexNowSettings:
    """The validated, merged ``INDEXNOW`` setting.

    :attr:`base_url` and :attr:`hosts` are worked out when first read: without
    ``BASE_URL`` they come from ``django.contrib.sites``, a database query that
    must not run before its table exists (system checks run before ``migrate``).
    """

    key: str
    key_location: str | None
    engines: tuple[Engine, ...]
    enabled: bool
    dry_run: bool
    dispatch: str
    queue_name: str
    queue_delay: float
    queue_timeout: float
    queue_failure_ttl: int
    retry: RetryPolicy
    max_urls: int
    debounce_cache: str
    debounce_ttl: int
    http_timeout: float
    history_enabled: bool = True
    history_retention_days: int = 14
    #: ``PREFLIGHT["ENABLED"]``: public URLs are rendered in-process before they are sent.
    preflight_enabled: bool = False
    #: ``PREVIOUS_KEYS``: the main key's predecessors, still served.
    previous_keys: tuple[str, ...] = ()
    #: ``THROTTLE["MAX_REQUESTS_PER_MINUTE"]``: POSTs a minute per engine, ``None``: no limit.
    throttle_per_minute: int | None = 60
    #: Seconds rq keeps a finished delivery job and its result (0: not at all).
    queue_result_ttl: int = 0
    #: Seconds over which flushes are merged into one delivery (0: one job per flush).
    queue_coalesce: float = 0
    #: ``TASKS``: the ``django.tasks`` backend alias and queue of ``DISPATCH: "tasks"``.
    tasks_backend: str = "default"
    tasks_queue: str = "default"
    #: ``BASE_URL`` and ``HOSTS`` as set (``BASE_URL`` may be ``None``).
    base_url_setting: str | None = field(default=None, repr=False)
    hosts_setting: Any = field(default=None, repr=False)
    _hosts_memo: _HostsMemo = field(
        default_factory=_HostsMemo, init=False, repr=False, compare=False
    )

    @cached_property
    def base_url(self) -> str:
        """Scheme and host that relative URLs are joined to, without a trailing slash."""
        base_url = self.base_url_setting
        if base_url is None:
            base_url = f"https://{_sites_domain()}"
        return normalize_url(base_url).rstrip("/")

    @property
    def hosts(self) -> Mapping[str, HostConfig]:
        """The hosts URLs may be submitted for, each with its key and key file.

        Hosts that come from code (``HOSTS`` as a dotted path to a callable,
        an app config's ``indexnow_hosts()``) are read again when
        :data:`HOSTS_REFRESH_SECONDS` have passed; when a read fails, the last
        hosts read are kept (and the failure logged), or, on the first read,
        :class:`~indexnow_django.exceptions.IndexNowConfigError` is raised.
        """
        memo = self._hosts_memo
        value = memo.value
        if value is not None and (memo.static or time.monotonic() < memo.expires):
            return value
        with memo.lock:
            if memo.value is not None and (memo.static or time.monotonic() < memo.expires):
                return memo.value
            try:
                raw_hosts, contributed, dynamic = self._read_hosts()
            except Exception as exc:
                if memo.value is None:
                    if isinstance(exc, IndexNowConfigError):
                        raise
                    raise IndexNowConfigError(
                        f"IndexNow could not read the hosts: {type(exc).__name__}: {exc}"
                    ) from exc
                logger.error(
                    "IndexNow could not read the hosts again (%s: %s); keeping the %d read before",
                    type(exc).__name__,
                    exc,
                    len(memo.value),
                )
                memo.expires = time.monotonic() + HOSTS_REFRESH_SECONDS
                return memo.value
            memo.value = self._host_entries(raw_hosts, contributed, memo)
            memo.static = not dynamic
            memo.expires = time.monotonic() + HOSTS_REFRESH_SECONDS
            return memo.value

    def reread_hosts(self) -> bool:
        """Read the hosts from code again now (a URL or a key file was asked for a host
        that is not among them); whether they changed.

        At most once a second per process (:data:`HOSTS_REREAD_SECONDS`), so that
        requests for unknown hosts cannot turn into a query each. Nothing is read
        when the hosts come from the settings alone.
        """
        memo = self._hosts_memo
        before = memo.value
        if before is None or memo.static:
            return False
        read_at = memo.expires - HOSTS_REFRESH_SECONDS
        if time.monotonic() - read_at < HOSTS_REREAD_SECONDS:
            return False
        memo.expires = 0.0
        return self.hosts != before

    def _read_hosts(self) -> tuple[Any, list[str], bool]:
        """``(HOSTS or what its function returned, the apps' hosts, whether any is code)``."""
        raw_hosts = self.hosts_setting
        dynamic = False
        if isinstance(raw_hosts, str):
            raw_hosts = _call_hosts(raw_hosts)
            dynamic = True
        contributed, hooked = _contributed_hosts()
        return raw_hosts, contributed, dynamic or hooked

    def _host_entries(
        self, raw_hosts: Any, contributed: list[str], memo: _HostsMemo
    ) -> dict[str, HostConfig]:
        base = urlsplit(self.base_url)
        entries: dict[str, HostConfig] = {}
        problems: list[str] = []
        if raw_hosts is None:
            entries[base.netloc] = HostConfig(
                base.netloc, self.key, self.key_location, previous_keys=self.previous_keys
            )
        else:
            for name in raw_hosts:
                options = (raw_hosts[name] if isinstance(raw_hosts, Mapping) else None) or {}
                found = list(_host_options(str(name), options)) if options else []
                try:
                    host = normalize_host(name)
                except (InvalidURL, TypeError, AttributeError):
                    problems.append(f"invalid host {name!r}")
                    continue
                if found:
                    problems.extend(problem.msg for problem in found)
                    continue
                own_key = options.get("KEY")
                previous = options.get("PREVIOUS_KEYS")
                if previous is None:  # a host with the main key has its predecessors too
                    previous = () if own_key else self.previous_keys
                entries[host] = HostConfig(
                    host,
                    own_key or self.key,
                    options.get("KEY_LOCATION") or (None if own_key else self.key_location),
                    previous_keys=tuple(previous),
                )
        for host in contributed:
            entries.setdefault(
                host, HostConfig(host, self.key, None, previous_keys=self.previous_keys)
            )
        if base.scheme != "https" and base.netloc in entries:
            # Engines look for the key file over https unless told: name the
            # http one in every request (``keyLocation``).
            entry = entries[base.netloc]
            entry = replace(entry, scheme=base.scheme)
            entries[base.netloc] = replace(entry, key_location=entry.key_file_url)
        if tuple(problems) != memo.problems:
            memo.problems = tuple(problems)
            for problem in problems:
                logger.error("IndexNow skipped a host from INDEXNOW['HOSTS']: %s", problem)
        return entries

    @property
    def resolved_dispatch(self) -> str:
        """``"queue"``, ``"sync"`` or ``"tasks"``: what ``DISPATCH`` means with the current
        ``RQ_QUEUES`` (``"auto"`` never resolves to ``"tasks"``: it is chosen by name)."""
        if self.dispatch != "auto":
            return self.dispatch
        return "queue" if self.queue_name in getattr(django_settings, "RQ_QUEUES", {}) else "sync"

    def host_config(self, host: str) -> HostConfig | None:
        return self.hosts.get(host)

    @property
    def keys_per_host(self) -> bool:
        """Whether some host serves other key files than the main key's (``Vary: Host``)."""
        return any(
            h.key != self.key or h.previous_keys != self.previous_keys for h in self.hosts.values()
        )

    def mask(self, text: str) -> str:
        """``text`` with every configured key (the main one, each host's, the previous
        ones) masked."""
        keys = [self.key, *self.previous_keys]
        for h in self.hosts.values():
            keys.append(h.key)
            keys.extend(h.previous_keys)
        return mask_keys(text, keys)


def _merged(raw: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(DEFAULTS)
    for name, value in raw.items():
        if isinstance(DEFAULTS.get(name), dict) and isinstance(value, Mapping):
            merged[name] = {**DEFAULTS[name], **value}
        else:
            merged[name] = copy.deepcopy(value)
    return merged


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _path(name: str, *subs: Any) -> str:
    """How a message names a setting: ``INDEXNOW['QUEUE']['TIMEOUT']``."""
    return f"INDEXNOW[{name!r}]" + "".join(f"[{sub!r}]" for sub in subs)


def _number(
    where: str,
    value: Any,
    *,
    minimum: float,
    above: bool = False,
    whole: bool = False,
    unit: str | None = "seconds",
    id: str,
    hint: str | None = None,
) -> Iterator[Problem]:
    """The problem with a numeric setting, if any: a finite number, whole when asked, in range.

    NaN and infinity are refused: they pass comparisons in surprising ways and
    break the arithmetic of delays and timeouts at run time.
    """
    valid = (
        (_is_whole(value) if whole else _is_number(value))
        and math.isfinite(value)
        and (value > minimum if above else value >= minimum)
    )
    if valid:
        return
    kind = "whole number" if whole else "number"
    of_unit = f" of {unit}" if unit else ""
    shown = f"{minimum:g}"
    message = f"{where} must be a {kind}{of_unit} {'>' if above else '>='} {shown}, not {value!r}."
    if isinstance(value, float) and not math.isfinite(value):
        hint = "NaN and infinity are not allowed: give a finite number."
    yield Problem(id, message, hint)


def _unknown(where: str, value: Mapping[str, Any], allowed: Mapping[str, Any]) -> Iterator[Problem]:
    for sub in value:
        if sub not in allowed:
            close = difflib.get_close_matches(str(sub), list(allowed), n=1)
            hint = f"Did you mean {close[0]!r}? " if close else ""
            yield Problem(
                "indexnow.E002",
                f"{where} has an unknown key {sub!r}.",
                f"{hint}Allowed keys: {', '.join(allowed)}.",
            )


def _check_abs_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in {"http", "https"} and bool(parts.hostname)


def _valid_key(value: Any) -> bool:
    return isinstance(value, str) and bool(KEY_RE.match(value))


def _sites_installed() -> bool:
    from django.apps import apps

    return apps.is_installed("django.contrib.sites")


def _sites_domain() -> str:
    """The current ``django.contrib.sites`` domain (a database query, cached by Django)."""
    from django.contrib.sites.models import Site

    try:
        domain: str = Site.objects.get_current().domain
    except Exception as exc:
        raise IndexNowConfigError(
            "INDEXNOW['BASE_URL'] is not set and django.contrib.sites could not give the "
            f"current domain ({exc}). Set BASE_URL, or SITE_ID and the Site's domain."
        ) from exc
    if not domain:
        raise IndexNowConfigError(
            "INDEXNOW['BASE_URL'] is not set and the current Site has no domain."
        )
    return domain


# --------------------------------------------------------------------------- rules
#
# One rule per key: each takes the merged settings and yields its problems.

Rule = Callable[[Mapping[str, Any]], Iterator[Problem]]

KEY_HINT = "manage.py indexnow_key prints a new random key."
ENGINES_HINT = "Known names: indexnow, bing, yandex, naver, seznam, yep."


def _documented_key(where: str, key: Any) -> Iterator[Problem]:
    if key in DOCUMENTED_KEYS:
        yield Problem(
            "indexnow.E020",
            f"{where} is the example key from the documentation: anyone can read it, and the "
            "engines would take submissions signed with it for yours.",
            "Make your own with manage.py indexnow_key and put it in " + where + ".",
        )


def _rule_key(conf: Mapping[str, Any]) -> Iterator[Problem]:
    key = conf["KEY"]
    if key is None:
        yield Problem("indexnow.E003", "INDEXNOW['KEY'] is required.", KEY_HINT)
    elif not _valid_key(key):
        yield Problem(
            "indexnow.E004",
            "INDEXNOW['KEY'] must be 8 to 128 characters of A-Z, a-z, 0-9 and '-'.",
            KEY_HINT,
        )
    else:
        yield from _documented_key("INDEXNOW['KEY']", key)


def _rule_key_location(conf: Mapping[str, Any]) -> Iterator[Problem]:
    if conf["KEY_LOCATION"] is not None and not _check_abs_url(conf["KEY_LOCATION"]):
        yield Problem(
            "indexnow.E005",
            "INDEXNOW['KEY_LOCATION'] must be an absolute http(s) URL or None.",
            "For example 'https://www.example.com/static/<KEY>.txt'.",
        )


def _rule_base_url(conf: Mapping[str, Any]) -> Iterator[Problem]:
    base_url = conf["BASE_URL"]
    if base_url is None:
        if not _sites_installed():
            yield Problem(
                "indexnow.E006",
                "INDEXNOW['BASE_URL'] is required when django.contrib.sites does not give "
                "the domain.",
                "Set it to the scheme and host of your site, e.g. 'https://www.example.com'.",
            )
        return
    if _check_abs_url(base_url) and urlsplit(base_url).path in ("", "/"):
        parts = urlsplit(base_url)
        if not parts.query and not parts.fragment:
            return
    if isinstance(base_url, str) and "://" not in base_url:
        bare = base_url.strip().strip("/")
        hint = f"Start it with its scheme: 'https://{bare}' (or 'http://{bare}')."
    elif isinstance(base_url, str) and urlsplit(base_url).scheme not in ("http", "https"):
        hint = "Use an http or https URL."
    else:
        hint = "Leave out any path, query or fragment."
    yield Problem(
        "indexnow.E007",
        "INDEXNOW['BASE_URL'] must be a scheme and host such as "
        f"'https://www.example.com', not {base_url!r}.",
        hint,
    )


def _rule_hosts(conf: Mapping[str, Any]) -> Iterator[Problem]:
    hosts = conf["HOSTS"]
    if hosts is None:
        return
    if isinstance(hosts, str):
        # Only imported here: calling it may query a database that does not exist yet.
        try:
            source = import_string(hosts)
        except ImportError as exc:
            yield Problem(
                "indexnow.E008",
                f"INDEXNOW['HOSTS'] is {hosts!r}, which cannot be imported ({exc}).",
                f"One host goes in a list: [{hosts!r}]. Otherwise give a dict "
                "{host: {'KEY': ..., 'KEY_LOCATION': ...}}, or the dotted path of a function "
                "that returns the list or dict.",
            )
            return
        if not callable(source):
            yield Problem(
                "indexnow.E008",
                f"INDEXNOW['HOSTS'] is {hosts!r}, which is not callable.",
                "The dotted path names a function that returns the list or dict of hosts.",
            )
        return
    if isinstance(hosts, bytes) or not isinstance(hosts, (list, tuple, Mapping)):
        yield Problem(
            "indexnow.E008",
            "INDEXNOW['HOSTS'] must be a list of host names, a dict "
            "{host: {'KEY': ..., 'KEY_LOCATION': ...}}, or the dotted path of a function "
            "that returns one.",
        )
        return
    for host in hosts:
        try:
            normalize_host(host)
        except InvalidURL:
            yield Problem(
                "indexnow.E008",
                f"INDEXNOW['HOSTS'] has an invalid host {host!r}.",
                "Give bare host names such as 'www.example.com' (no scheme, no path).",
            )
            continue
        if isinstance(hosts, Mapping):
            yield from _host_options(host, hosts[host])


def _host_options(host: str, options: Any) -> Iterator[Problem]:
    """The problems of one ``HOSTS`` entry's ``{"KEY": ..., "KEY_LOCATION": ...}``."""
    options = options if options is not None else {}
    where = _path("HOSTS", host)
    if not isinstance(options, Mapping):
        yield Problem(
            "indexnow.E008",
            f"{where} must be a dict with 'KEY', 'KEY_LOCATION' and 'PREVIOUS_KEYS' "
            "(all optional).",
        )
        return
    yield from _unknown(where, options, {"KEY": None, "KEY_LOCATION": None, "PREVIOUS_KEYS": None})
    key = options.get("KEY")
    if key is not None and not _valid_key(key):
        yield Problem(
            "indexnow.E004",
            f"{where}['KEY'] must be 8 to 128 characters of A-Z, a-z, 0-9 and '-'.",
            KEY_HINT,
        )
    elif key is not None:
        yield from _documented_key(f"{where}['KEY']", key)
    location = options.get("KEY_LOCATION")
    if location is not None and not _check_abs_url(location):
        yield Problem(
            "indexnow.E005",
            f"{where}['KEY_LOCATION'] must be an absolute http(s) URL or None.",
        )
    if options.get("PREVIOUS_KEYS") is not None:
        yield from _previous_keys(f"{where}['PREVIOUS_KEYS']", options["PREVIOUS_KEYS"], key)


def _previous_keys(where: str, value: Any, current: Any) -> Iterator[Problem]:
    """The problems of a ``PREVIOUS_KEYS`` list: keys, none of them the current one."""
    hint = (
        "List the keys being rotated out, e.g. ['<old key>']: their key files stay served "
        "while engines may still check submissions made with them."
    )
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        yield Problem(
            "indexnow.E021", f"{where} must be a list of keys, not {type(value).__name__}.", hint
        )
        return
    for key in value:
        if not _valid_key(key):
            yield Problem(
                "indexnow.E021",
                f"{where} holds {key!r}, which is not 8 to 128 characters of A-Z, a-z, 0-9 "
                "and '-'.",
                hint,
            )
        elif key == current:
            yield Problem(
                "indexnow.E021",
                f"{where} holds the current key {mask_key(key)}.",
                "A key is either current (KEY) or being rotated out (PREVIOUS_KEYS): remove "
                "it from PREVIOUS_KEYS.",
            )


def _rule_previous_keys(conf: Mapping[str, Any]) -> Iterator[Problem]:
    yield from _previous_keys("INDEXNOW['PREVIOUS_KEYS']", conf["PREVIOUS_KEYS"], conf["KEY"])


def _rule_engines(conf: Mapping[str, Any]) -> Iterator[Problem]:
    engines = conf["ENGINES"]
    if isinstance(engines, (str, bytes)) or not isinstance(engines, (list, tuple)) or not engines:
        yield Problem(
            "indexnow.E009",
            "INDEXNOW['ENGINES'] must be a non-empty list of engine names or endpoint URLs.",
            ENGINES_HINT,
        )
        return
    for entry in engines:
        try:
            resolve_engine(entry)
        except ValueError as exc:
            yield Problem(
                "indexnow.E009", f"INDEXNOW['ENGINES'] has an invalid entry: {exc}.", ENGINES_HINT
            )


def _rule_flags(conf: Mapping[str, Any]) -> Iterator[Problem]:
    for flag in ("ENABLED", "DRY_RUN"):
        if not isinstance(conf[flag], bool):
            yield Problem(
                "indexnow.E010", f"INDEXNOW[{flag!r}] must be True or False, not {conf[flag]!r}."
            )


def _rule_dispatch(conf: Mapping[str, Any]) -> Iterator[Problem]:
    if conf["DISPATCH"] not in DISPATCH_MODES:
        yield Problem(
            "indexnow.E011",
            "INDEXNOW['DISPATCH'] must be one of 'auto', 'queue', 'sync', 'tasks', "
            f"not {conf['DISPATCH']!r}.",
        )


def _rule_tasks(conf: Mapping[str, Any]) -> Iterator[Problem]:
    tasks = conf["TASKS"]
    for sub in ("BACKEND", "QUEUE_NAME"):
        if not isinstance(tasks[sub], str) or not tasks[sub]:
            yield Problem(
                "indexnow.E023",
                f"{_path('TASKS', sub)} must be a non-empty string, not {tasks[sub]!r}.",
            )
    if conf["DISPATCH"] != "tasks" or not isinstance(tasks["BACKEND"], str):
        return
    from .compat import tasks_framework

    framework = tasks_framework()
    if framework is None:
        yield Problem(
            "indexnow.E023",
            "INDEXNOW['DISPATCH'] is 'tasks' but this Django has no django.tasks "
            "(it came with Django 6.0) and the django-tasks backport is not installed.",
            "pip install django-tasks, or use Django 6.0 or later.",
        )
        return
    configured = list(framework.backends.settings)
    if tasks["BACKEND"] not in configured:
        yield Problem(
            "indexnow.E023",
            f"INDEXNOW['DISPATCH'] is 'tasks' but INDEXNOW['TASKS']['BACKEND'] "
            f"{tasks['BACKEND']!r} is not in settings.TASKS.",
            f"Add {tasks['BACKEND']!r} to TASKS, or set INDEXNOW['TASKS']['BACKEND'] to one of: "
            f"{', '.join(configured) or '(none configured)'}.",
        )


def _rule_queue(conf: Mapping[str, Any]) -> Iterator[Problem]:
    queue = conf["QUEUE"]
    name = queue["NAME"]
    if not isinstance(name, str) or not name:
        yield Problem("indexnow.E013", "INDEXNOW['QUEUE']['NAME'] must be a queue name.")
    for sub, minimum in (("DELAY", 0), ("TIMEOUT", 1)):
        yield from _number(_path("QUEUE", sub), queue[sub], minimum=minimum, id="indexnow.E013")
    yield from _number(
        _path("QUEUE", "FAILURE_TTL"),
        queue["FAILURE_TTL"],
        minimum=1,
        whole=True,
        id="indexnow.E013",
        hint="It is how long rq keeps a failed job in its failed job registry; "
        "the default, 604800, is 7 days.",
    )
    yield from _number(
        _path("QUEUE", "RESULT_TTL"),
        queue["RESULT_TTL"],
        minimum=0,
        whole=True,
        id="indexnow.E013",
        hint="It is how long rq keeps a finished delivery job and its result; "
        "0, the default, removes it at once (the history is in the database).",
    )
    yield from _number(
        _path("QUEUE", "COALESCE"),
        queue["COALESCE"],
        minimum=0,
        id="indexnow.E013",
        hint="0, the default, sends each flush in a job of its own; a few seconds (5, say) "
        "merge the flushes of every process into one POST per host and engine.",
    )
    if conf["DISPATCH"] == "queue" and isinstance(name, str):
        rq_queues = getattr(django_settings, "RQ_QUEUES", {}) or {}
        if name not in rq_queues:
            yield Problem(
                "indexnow.E014",
                f"INDEXNOW['DISPATCH'] is 'queue' but INDEXNOW['QUEUE']['NAME'] {name!r} "
                "is not in RQ_QUEUES.",
                f"Add {name!r} to RQ_QUEUES, or set INDEXNOW['QUEUE']['NAME'] to one of: "
                f"{', '.join(rq_queues) or '(none configured)'}.",
            )


def _rule_retry(conf: Mapping[str, Any]) -> Iterator[Problem]:
    retry = conf["RETRY"]
    yield from _number(
        _path("RETRY", "MAX_ATTEMPTS"),
        retry["MAX_ATTEMPTS"],
        minimum=1,
        whole=True,
        unit=None,
        id="indexnow.E015",
    )
    for sub in ("BASE_DELAY", "MAX_DELAY", "SERVER_ERROR_DELAY"):
        yield from _number(_path("RETRY", sub), retry[sub], minimum=0, id="indexnow.E015")
    yield from _number(
        _path("RETRY", "MULTIPLIER"), retry["MULTIPLIER"], minimum=1, unit=None, id="indexnow.E015"
    )
    attempts, multiplier = retry["MAX_ATTEMPTS"], retry["MULTIPLIER"]
    if _is_whole(attempts) and attempts >= 1 and _is_number(multiplier) and multiplier >= 1:
        try:
            float(multiplier) ** (attempts - 1)
        except OverflowError:
            yield Problem(
                "indexnow.E015",
                f"INDEXNOW['RETRY']['MULTIPLIER'] {multiplier!r} to the power of "
                f"MAX_ATTEMPTS - 1 ({attempts - 1}) is too large to compute a delay.",
                "Lower MULTIPLIER or MAX_ATTEMPTS: every delay is capped at MAX_DELAY anyway.",
            )


def _rule_batch(conf: Mapping[str, Any]) -> Iterator[Problem]:
    max_urls = conf["BATCH"]["MAX_URLS"]
    if not (_is_whole(max_urls) and 1 <= max_urls <= MAX_BATCH_SIZE):
        yield Problem(
            "indexnow.E016",
            f"INDEXNOW['BATCH']['MAX_URLS'] must be a whole number from 1 to {MAX_BATCH_SIZE}, "
            f"not {max_urls!r}.",
            "The IndexNow protocol accepts at most 10,000 URLs per request.",
        )


def _rule_debounce(conf: Mapping[str, Any]) -> Iterator[Problem]:
    debounce = conf["DEBOUNCE"]
    caches = getattr(django_settings, "CACHES", {}) or {}
    if debounce["CACHE"] not in caches:
        yield Problem(
            "indexnow.E017",
            f"INDEXNOW['DEBOUNCE']['CACHE'] is {debounce['CACHE']!r}, which is not in CACHES.",
            f"Use one of: {', '.join(map(repr, caches)) or '(no cache configured)'}.",
        )
    yield from _number(
        _path("DEBOUNCE", "TTL"),
        debounce["TTL"],
        minimum=0,
        whole=True,
        id="indexnow.E017",
        hint="0 disables debouncing.",
    )


def _rule_http(conf: Mapping[str, Any]) -> Iterator[Problem]:
    yield from _number(
        _path("HTTP", "TIMEOUT"), conf["HTTP"]["TIMEOUT"], minimum=0, above=True, id="indexnow.E018"
    )


def _rule_history(conf: Mapping[str, Any]) -> Iterator[Problem]:
    recording = conf["HISTORY"]["ENABLED"]
    if not isinstance(recording, bool):
        yield Problem(
            "indexnow.E019",
            f"INDEXNOW['HISTORY']['ENABLED'] must be True or False, not {recording!r}.",
        )
    yield from _number(
        _path("HISTORY", "RETENTION_DAYS"),
        conf["HISTORY"]["RETENTION_DAYS"],
        minimum=1,
        whole=True,
        unit="days",
        id="indexnow.E019",
    )


def _rule_preflight(conf: Mapping[str, Any]) -> Iterator[Problem]:
    enabled = conf["PREFLIGHT"]["ENABLED"]
    if not isinstance(enabled, bool):
        yield Problem(
            "indexnow.E024",
            f"INDEXNOW['PREFLIGHT']['ENABLED'] must be True or False, not {enabled!r}.",
        )


def _rule_throttle(conf: Mapping[str, Any]) -> Iterator[Problem]:
    per_minute = conf["THROTTLE"]["MAX_REQUESTS_PER_MINUTE"]
    if per_minute is None:
        return
    yield from _number(
        _path("THROTTLE", "MAX_REQUESTS_PER_MINUTE"),
        per_minute,
        minimum=1,
        whole=True,
        unit=None,
        id="indexnow.E022",
        hint="None sends without a limit.",
    )


#: Rules of the top-level keys, in the order their problems are reported.
RULES: tuple[Rule, ...] = (
    _rule_key,
    _rule_previous_keys,
    _rule_key_location,
    _rule_base_url,
    _rule_hosts,
    _rule_engines,
    _rule_flags,
    _rule_dispatch,
)
#: Rules of the nested dicts, run once each of them is a dict.
NESTED_RULES: tuple[Rule, ...] = (
    _rule_queue,
    _rule_retry,
    _rule_batch,
    _rule_debounce,
    _rule_http,
    _rule_history,
    _rule_preflight,
    _rule_throttle,
    _rule_tasks,
)
NESTED = (
    "QUEUE",
    "RETRY",
    "BATCH",
    "DEBOUNCE",
    "HTTP",
    "HISTORY",
    "PREFLIGHT",
    "THROTTLE",
    "TASKS",
)


def validate(raw: Any = None) -> list[Problem]:
    """Every problem with ``raw`` (default: ``settings.INDEXNOW``), in a stable order."""
    if raw is None:
        raw = getattr(django_settings, "INDEXNOW", None)
    if raw is None:
        return [
            Problem(
                "indexnow.E001",
                "settings.INDEXNOW is missing.",
                'Add INDEXNOW = {"KEY": "...", "BASE_URL": "https://www.example.com"} '
                "to your settings; "
                "manage.py indexnow_key prints a new key.",
            )
        ]
    if not isinstance(raw, Mapping):
        return [
            Problem(
                "indexnow.E001",
                f"settings.INDEXNOW must be a dict, not {type(raw).__name__}.",
                'Use INDEXNOW = {"KEY": "...", "BASE_URL": "https://www.example.com"}.',
            )
        ]
    problems = list(_unknown("INDEXNOW", raw, DEFAULTS))
    conf = _merged(raw)
    for rule in RULES:
        problems.extend(rule(conf))
    shapes = [(name, raw.get(name, DEFAULTS[name])) for name in NESTED]
    bad = [name for name, value in shapes if not isinstance(value, Mapping)]
    for name, value in shapes:
        if name in bad:
            problems.append(
                Problem(
                    "indexnow.E012",
                    f"INDEXNOW[{name!r}] must be a dict, not {type(value).__name__}.",
                    f"Allowed keys: {', '.join(DEFAULTS[name])}.",
                )
            )
        else:
            problems.extend(_unknown(_path(name), value, DEFAULTS[name]))
    if not bad:
        for rule in NESTED_RULES:
            problems.extend(rule(conf))
    return problems


def _build(raw: Mapping[str, Any]) -> IndexNowSettings:
    conf = _merged(raw)
    key: str = conf["KEY"]
    retry = conf["RETRY"]
    return IndexNowSettings(
        key=key,
        key_location=conf["KEY_LOCATION"],
        base_url_setting=conf["BASE_URL"],
        hosts_setting=conf["HOSTS"],
        engines=tuple(dict.fromkeys(resolve_engine(e) for e in conf["ENGINES"])),
        enabled=conf["ENABLED"],
        dry_run=conf["DRY_RUN"],
        dispatch=conf["DISPATCH"],
        queue_name=conf["QUEUE"]["NAME"],
        queue_delay=conf["QUEUE"]["DELAY"],
        queue_timeout=conf["QUEUE"]["TIMEOUT"],
        queue_failure_ttl=conf["QUEUE"]["FAILURE_TTL"],
        queue_result_ttl=conf["QUEUE"]["RESULT_TTL"],
        queue_coalesce=conf["QUEUE"]["COALESCE"],
        retry=RetryPolicy(
            max_attempts=retry["MAX_ATTEMPTS"],
            base_delay=retry["BASE_DELAY"],
            multiplier=retry["MULTIPLIER"],
            max_delay=retry["MAX_DELAY"],
            server_error_delay=retry["SERVER_ERROR_DELAY"],
        ),
        max_urls=conf["BATCH"]["MAX_URLS"],
        debounce_cache=conf["DEBOUNCE"]["CACHE"],
        debounce_ttl=conf["DEBOUNCE"]["TTL"],
        http_timeout=conf["HTTP"]["TIMEOUT"],
        history_enabled=conf["HISTORY"]["ENABLED"],
        history_retention_days=conf["HISTORY"]["RETENTION_DAYS"],
        preflight_enabled=conf["PREFLIGHT"]["ENABLED"],
        previous_keys=tuple(conf["PREVIOUS_KEYS"]),
        throttle_per_minute=conf["THROTTLE"]["MAX_REQUESTS_PER_MINUTE"],
        tasks_backend=conf["TASKS"]["BACKEND"],
        tasks_queue=conf["TASKS"]["QUEUE_NAME"],
    )


def _call_hosts(path: str) -> Any:
    """What the function at dotted ``path`` (``HOSTS``) returns: a list or dict of hosts."""
    try:
        source = import_string(path)
    except ImportError as exc:
        raise IndexNowConfigError(f"INDEXNOW['HOSTS'] {path!r} cannot be imported: {exc}") from exc
    hosts = source()
    if isinstance(hosts, (str, bytes)) or not isinstance(hosts, (list, tuple, Mapping)):
        raise IndexNowConfigError(
            f"INDEXNOW['HOSTS'] {path!r} returned {type(hosts).__name__}, not a list of "
            "host names or a dict {host: {'KEY': ..., 'KEY_LOCATION': ...}}."
        )
    return hosts


def _contributed_hosts() -> tuple[list[str], bool]:
    """Hosts that installed apps allow besides ``HOSTS`` (with the default key): an app
    config's ``indexnow_hosts()``, e.g. ``indexnow_django.contrib.wagtail``'s sites;
    and whether any app has that hook."""
    from django.apps import apps

    hosts: list[str] = []
    hooked = False
    for app_config in apps.get_app_configs():
        source = getattr(app_config, "indexnow_hosts", None)
        if source is not None:
            hooked = True
            for host in source():
                try:
                    hosts.append(normalize_host(host))
                except (InvalidURL, TypeError, AttributeError):
                    continue
    return hosts, hooked


_cache: IndexNowSettings | None = None


def get_settings(*, resolve_hosts: bool = True) -> IndexNowSettings:
    """The current settings; raises :class:`IndexNowConfigError` when they are invalid.

    The base URL and the hosts are resolved too, which without ``BASE_URL``
    queries ``django.contrib.sites``; ``resolve_hosts=False`` leaves them for
    later, for code that may run before the database exists (system checks).
    """
    global _cache
    if _cache is None:
        problems = validate()
        if problems:
            details = "; ".join(f"{p.msg} ({p.id})" for p in problems)
            raise IndexNowConfigError(f"settings.INDEXNOW is invalid: {details}")
        _cache = _build(getattr(django_settings, "INDEXNOW", {}))
    if resolve_hosts:
        _cache.hosts  # noqa: B018 (resolved and kept, or IndexNowConfigError)
    return _cache


_enabled: bool | None = None


def is_enabled() -> bool:
    """``INDEXNOW['ENABLED']`` without requiring the rest to be valid (kept like the
    settings, until ``setting_changed``: every tracked save asks)."""
    global _enabled
    if _enabled is None:
        raw = getattr(django_settings, "INDEXNOW", None)
        _enabled = not isinstance(raw, Mapping) or raw.get("ENABLED", True) is not False
    return _enabled


def clear_cache(**kwargs: Any) -> None:
    """Forget the cached settings (connected to ``setting_changed``)."""
    global _cache, _enabled
    if kwargs.get("setting") in (
        None,
        "INDEXNOW",
        "RQ_QUEUES",
        "CACHES",
        "SITE_ID",
        "INSTALLED_APPS",
        "TASKS",
    ):
        _cache = None
        _enabled = None


def settings_fingerprint() -> dict[str, Any]:
    """What a worker records of the ``INDEXNOW`` settings it started with.

    ``fingerprint`` is a short hash of the merged settings (equal settings, equal
    fingerprint; the key cannot be read back from it); ``DRY_RUN`` and ``ENABLED``
    are kept as they are, so ``indexnow_check`` can say what a difference means.
    """
    import hashlib
    import json

    def stable(value: Any) -> str:
        # A function or a class by its dotted name: its repr holds an address that differs
        # between processes.
        name = getattr(value, "__qualname__", None)
        if callable(value) and name:
            return f"{getattr(value, '__module__', '')}.{name}"
        return repr(value)

    raw = getattr(django_settings, "INDEXNOW", None)
    merged = _merged(raw) if isinstance(raw, Mapping) else {"INDEXNOW": repr(raw)}
    text = json.dumps(merged, sort_keys=True, default=stable)
    return {
        "fingerprint": hashlib.sha256(text.encode()).hexdigest()[:12],
        "DRY_RUN": merged.get("DRY_RUN"),
        "ENABLED": merged.get("ENABLED"),
    }
