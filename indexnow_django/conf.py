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
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings as django_settings

from .client import MAX_BATCH_SIZE, Engine, RetryPolicy, resolve_engine
from .exceptions import IndexNowConfigError
from .masking import mask_key, mask_keys
from .normalize import InvalidURL, normalize_host, normalize_url

__all__ = [
    "DEFAULTS",
    "HostConfig",
    "IndexNowSettings",
    "Problem",
    "clear_cache",
    "get_settings",
    "mask_key",
    "mask_keys",
    "validate",
]

DEFAULTS: dict[str, Any] = {
    "KEY": None,
    "KEY_LOCATION": None,
    "BASE_URL": None,
    "HOSTS": None,
    "ENGINES": ["indexnow"],
    "ENABLED": True,
    "DRY_RUN": False,
    "DISPATCH": "auto",
    "QUEUE": {"NAME": "default", "DELAY": 0, "TIMEOUT": 60, "FAILURE_TTL": 7 * 24 * 3600},
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
}

DISPATCH_MODES = ("auto", "queue", "sync")

KEY_RE = re.compile(r"^[A-Za-z0-9-]{8,128}$")


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

    @property
    def key_file_url(self) -> str:
        """Where engines fetch the key file from."""
        return self.key_location or f"https://{self.host}/{self.key}.txt"

    @property
    def masked_key_file_url(self) -> str:
        """:attr:`key_file_url` as messages show it, the key masked."""
        return mask_keys(self.key_file_url, [self.key])


@dataclass(frozen=True)
class IndexNowSettings:
    """The validated, merged ``INDEXNOW`` setting."""

    key: str
    key_location: str | None
    base_url: str
    hosts: Mapping[str, HostConfig]
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

    @property
    def resolved_dispatch(self) -> str:
        """``"queue"`` or ``"sync"``: what ``DISPATCH`` means with the current ``RQ_QUEUES``."""
        if self.dispatch != "auto":
            return self.dispatch
        return "queue" if self.queue_name in getattr(django_settings, "RQ_QUEUES", {}) else "sync"

    def host_config(self, host: str) -> HostConfig | None:
        return self.hosts.get(host)

    def mask(self, text: str) -> str:
        """``text`` with every configured key (the main one and each host's) masked."""
        return mask_keys(text, [self.key, *(h.key for h in self.hosts.values())])


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


def _unknown(
    name: str, value: Mapping[str, Any], allowed: Mapping[str, Any], problems: list[Problem]
) -> None:
    for sub in value:
        if sub not in allowed:
            close = difflib.get_close_matches(str(sub), list(allowed), n=1)
            hint = f"Did you mean {close[0]!r}? " if close else ""
            problems.append(
                Problem(
                    "indexnow.E002",
                    f"INDEXNOW[{name!r}] has an unknown key {sub!r}.",
                    f"{hint}Allowed keys: {', '.join(allowed)}.",
                )
            )


def _check_abs_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in {"http", "https"} and bool(parts.hostname)


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


def validate(raw: Any = None) -> list[Problem]:
    """Every problem with ``raw`` (default: ``settings.INDEXNOW``), in a stable order."""
    if raw is None:
        raw = getattr(django_settings, "INDEXNOW", None)
    problems: list[Problem] = []
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
    for name in raw:
        if name not in DEFAULTS:
            close = difflib.get_close_matches(str(name), list(DEFAULTS), n=1)
            hint = f"Did you mean {close[0]!r}? " if close else ""
            problems.append(
                Problem(
                    "indexnow.E002",
                    f"INDEXNOW has an unknown key {name!r}.",
                    f"{hint}Allowed keys: {', '.join(DEFAULTS)}.",
                )
            )
    conf = _merged(raw)

    key = conf["KEY"]
    if key is None:
        problems.append(
            Problem(
                "indexnow.E003",
                "INDEXNOW['KEY'] is required.",
                "manage.py indexnow_key prints a new random key.",
            )
        )
    elif not isinstance(key, str) or not KEY_RE.match(key):
        problems.append(
            Problem(
                "indexnow.E004",
                "INDEXNOW['KEY'] must be 8 to 128 characters of A-Z, a-z, 0-9 and '-'.",
                "manage.py indexnow_key prints a new random key.",
            )
        )

    if conf["KEY_LOCATION"] is not None and not _check_abs_url(conf["KEY_LOCATION"]):
        problems.append(
            Problem(
                "indexnow.E005",
                "INDEXNOW['KEY_LOCATION'] must be an absolute http(s) URL or None.",
                "For example 'https://www.example.com/static/<KEY>.txt'.",
            )
        )

    base_url = conf["BASE_URL"]
    if base_url is None:
        if not _sites_installed():
            problems.append(
                Problem(
                    "indexnow.E006",
                    "INDEXNOW['BASE_URL'] is required when django.contrib.sites does not give "
                    "the domain.",
                    "Set it to the scheme and host of your site, e.g. 'https://www.example.com'.",
                )
            )
    elif not _check_abs_url(base_url) or urlsplit(base_url).path not in ("", "/"):
        problems.append(
            Problem(
                "indexnow.E007",
                f"INDEXNOW['BASE_URL'] must be a scheme and host such as "
                f"'https://www.example.com', not {base_url!r}.",
                "Leave out any path, query or fragment.",
            )
        )

    hosts = conf["HOSTS"]
    if hosts is not None:
        if isinstance(hosts, (str, bytes)) or not isinstance(hosts, (list, tuple, Mapping)):
            problems.append(
                Problem(
                    "indexnow.E008",
                    "INDEXNOW['HOSTS'] must be a list of host names or a dict "
                    "{host: {'KEY': ..., 'KEY_LOCATION': ...}}.",
                )
            )
        else:
            for host in hosts:
                try:
                    normalize_host(host)
                except InvalidURL:
                    problems.append(
                        Problem(
                            "indexnow.E008",
                            f"INDEXNOW['HOSTS'] has an invalid host {host!r}.",
                            "Give bare host names such as 'www.example.com' (no scheme, no path).",
                        )
                    )
                    continue
                if isinstance(hosts, Mapping):
                    options = hosts[host] if hosts[host] is not None else {}
                    if not isinstance(options, Mapping):
                        problems.append(
                            Problem(
                                "indexnow.E008",
                                f"INDEXNOW['HOSTS'][{host!r}] must be a dict with 'KEY' and "
                                "'KEY_LOCATION' (both optional).",
                            )
                        )
                        continue
                    _unknown(
                        f"HOSTS'][{host!r}", options, {"KEY": None, "KEY_LOCATION": None}, problems
                    )
                    hkey = options.get("KEY")
                    if hkey is not None and (not isinstance(hkey, str) or not KEY_RE.match(hkey)):
                        problems.append(
                            Problem(
                                "indexnow.E004",
                                f"INDEXNOW['HOSTS'][{host!r}]['KEY'] must be 8 to 128 characters "
                                "of A-Z, a-z, 0-9 and '-'.",
                                "manage.py indexnow_key prints a new random key.",
                            )
                        )
                    hloc = options.get("KEY_LOCATION")
                    if hloc is not None and not _check_abs_url(hloc):
                        problems.append(
                            Problem(
                                "indexnow.E005",
                                f"INDEXNOW['HOSTS'][{host!r}]['KEY_LOCATION'] must be an absolute "
                                "http(s) URL or None.",
                            )
                        )

    engines = conf["ENGINES"]
    if isinstance(engines, (str, bytes)) or not isinstance(engines, (list, tuple)) or not engines:
        problems.append(
            Problem(
                "indexnow.E009",
                "INDEXNOW['ENGINES'] must be a non-empty list of engine names or endpoint URLs.",
                "Known names: indexnow, bing, yandex, naver, seznam, yep.",
            )
        )
    else:
        for entry in engines:
            try:
                resolve_engine(entry)
            except ValueError as exc:
                problems.append(
                    Problem(
                        "indexnow.E009",
                        f"INDEXNOW['ENGINES'] has an invalid entry: {exc}.",
                        "Known names: indexnow, bing, yandex, naver, seznam, yep.",
                    )
                )

    for flag in ("ENABLED", "DRY_RUN"):
        if not isinstance(conf[flag], bool):
            problems.append(
                Problem(
                    "indexnow.E010",
                    f"INDEXNOW[{flag!r}] must be True or False, not {conf[flag]!r}.",
                )
            )

    if conf["DISPATCH"] not in DISPATCH_MODES:
        problems.append(
            Problem(
                "indexnow.E011",
                "INDEXNOW['DISPATCH'] must be one of 'auto', 'queue', 'sync', "
                f"not {conf['DISPATCH']!r}.",
            )
        )

    nested_ok = True
    for name in ("QUEUE", "RETRY", "BATCH", "DEBOUNCE", "HTTP", "HISTORY"):
        value = raw.get(name, DEFAULTS[name])
        if not isinstance(value, Mapping):
            nested_ok = False
            problems.append(
                Problem(
                    "indexnow.E012",
                    f"INDEXNOW[{name!r}] must be a dict, not {type(value).__name__}.",
                    f"Allowed keys: {', '.join(DEFAULTS[name])}.",
                )
            )
        else:
            _unknown(name, value, DEFAULTS[name], problems)
    if not nested_ok:
        return problems

    queue = conf["QUEUE"]
    if not isinstance(queue["NAME"], str) or not queue["NAME"]:
        problems.append(Problem("indexnow.E013", "INDEXNOW['QUEUE']['NAME'] must be a queue name."))
    for sub in ("DELAY", "TIMEOUT"):
        minimum = 0 if sub == "DELAY" else 1
        if not _is_number(queue[sub]) or queue[sub] < minimum:
            problems.append(
                Problem(
                    "indexnow.E013",
                    f"INDEXNOW['QUEUE'][{sub!r}] must be a number of seconds >= {minimum}, "
                    f"not {queue[sub]!r}.",
                )
            )
    failure_ttl = queue["FAILURE_TTL"]
    if not isinstance(failure_ttl, int) or isinstance(failure_ttl, bool) or failure_ttl < 1:
        problems.append(
            Problem(
                "indexnow.E013",
                "INDEXNOW['QUEUE']['FAILURE_TTL'] must be a whole number of seconds >= 1, "
                f"not {failure_ttl!r}.",
                "It is how long rq keeps a failed job in its failed job registry; "
                "the default, 604800, is 7 days.",
            )
        )
    if conf["DISPATCH"] == "queue" and isinstance(queue["NAME"], str):
        rq_queues = getattr(django_settings, "RQ_QUEUES", {}) or {}
        if queue["NAME"] not in rq_queues:
            problems.append(
                Problem(
                    "indexnow.E014",
                    f"INDEXNOW['DISPATCH'] is 'queue' but INDEXNOW['QUEUE']['NAME'] "
                    f"{queue['NAME']!r} is not in RQ_QUEUES.",
                    f"Add {queue['NAME']!r} to RQ_QUEUES, "
                    "or set INDEXNOW['QUEUE']['NAME'] to one of: "
                    f"{', '.join(rq_queues) or '(none configured)'}.",
                )
            )

    retry = conf["RETRY"]
    if (
        not isinstance(retry["MAX_ATTEMPTS"], int)
        or isinstance(retry["MAX_ATTEMPTS"], bool)
        or retry["MAX_ATTEMPTS"] < 1
    ):
        problems.append(
            Problem(
                "indexnow.E015",
                "INDEXNOW['RETRY']['MAX_ATTEMPTS'] must be a whole number >= 1, "
                f"not {retry['MAX_ATTEMPTS']!r}.",
            )
        )
    for sub in ("BASE_DELAY", "MAX_DELAY", "SERVER_ERROR_DELAY"):
        if not _is_number(retry[sub]) or retry[sub] < 0:
            problems.append(
                Problem(
                    "indexnow.E015",
                    f"INDEXNOW['RETRY'][{sub!r}] must be a number of seconds >= 0, "
                    f"not {retry[sub]!r}.",
                )
            )
    if not _is_number(retry["MULTIPLIER"]) or retry["MULTIPLIER"] < 1:
        problems.append(
            Problem(
                "indexnow.E015",
                "INDEXNOW['RETRY']['MULTIPLIER'] must be a number >= 1, "
                f"not {retry['MULTIPLIER']!r}.",
            )
        )

    max_urls = conf["BATCH"]["MAX_URLS"]
    if (
        not isinstance(max_urls, int)
        or isinstance(max_urls, bool)
        or not 1 <= max_urls <= MAX_BATCH_SIZE
    ):
        problems.append(
            Problem(
                "indexnow.E016",
                f"INDEXNOW['BATCH']['MAX_URLS'] must be a whole number from 1 to {MAX_BATCH_SIZE}, "
                f"not {max_urls!r}.",
                "The IndexNow protocol accepts at most 10,000 URLs per request.",
            )
        )

    debounce = conf["DEBOUNCE"]
    caches = getattr(django_settings, "CACHES", {}) or {}
    if debounce["CACHE"] not in caches:
        problems.append(
            Problem(
                "indexnow.E017",
                f"INDEXNOW['DEBOUNCE']['CACHE'] is {debounce['CACHE']!r}, which is not in CACHES.",
                f"Use one of: {', '.join(map(repr, caches)) or '(no cache configured)'}.",
            )
        )
    ttl = debounce["TTL"]
    if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0:
        problems.append(
            Problem(
                "indexnow.E017",
                f"INDEXNOW['DEBOUNCE']['TTL'] must be a whole number of seconds >= 0, not {ttl!r}.",
                "0 disables debouncing.",
            )
        )

    timeout = conf["HTTP"]["TIMEOUT"]
    if not _is_number(timeout) or timeout <= 0:
        problems.append(
            Problem(
                "indexnow.E018",
                f"INDEXNOW['HTTP']['TIMEOUT'] must be a number of seconds > 0, not {timeout!r}.",
            )
        )

    recording = conf["HISTORY"]["ENABLED"]
    if not isinstance(recording, bool):
        problems.append(
            Problem(
                "indexnow.E019",
                f"INDEXNOW['HISTORY']['ENABLED'] must be True or False, not {recording!r}.",
            )
        )
    days = conf["HISTORY"]["RETENTION_DAYS"]
    if not isinstance(days, int) or isinstance(days, bool) or days < 1:
        problems.append(
            Problem(
                "indexnow.E019",
                f"INDEXNOW['HISTORY']['RETENTION_DAYS'] must be a whole number of days >= 1, "
                f"not {days!r}.",
            )
        )
    return problems


def _build(raw: Mapping[str, Any]) -> IndexNowSettings:
    conf = _merged(raw)
    base_url = conf["BASE_URL"]
    if base_url is None:
        base_url = f"https://{_sites_domain()}"
    base_url = normalize_url(base_url).rstrip("/")
    base_host = urlsplit(base_url).netloc
    raw_hosts = conf["HOSTS"]
    key: str = conf["KEY"]
    hosts: dict[str, HostConfig] = {}
    if raw_hosts is None:
        hosts[base_host] = HostConfig(base_host, key, conf["KEY_LOCATION"])
    else:
        for name in raw_hosts:
            options = raw_hosts[name] if isinstance(raw_hosts, Mapping) else None
            options = options or {}
            host = normalize_host(name)
            hosts[host] = HostConfig(
                host,
                options.get("KEY") or key,
                options.get("KEY_LOCATION")
                or (None if options.get("KEY") else conf["KEY_LOCATION"]),
            )
    retry = conf["RETRY"]
    return IndexNowSettings(
        key=key,
        key_location=conf["KEY_LOCATION"],
        base_url=base_url,
        hosts=hosts,
        engines=tuple(dict.fromkeys(resolve_engine(e) for e in conf["ENGINES"])),
        enabled=conf["ENABLED"],
        dry_run=conf["DRY_RUN"],
        dispatch=conf["DISPATCH"],
        queue_name=conf["QUEUE"]["NAME"],
        queue_delay=conf["QUEUE"]["DELAY"],
        queue_timeout=conf["QUEUE"]["TIMEOUT"],
        queue_failure_ttl=conf["QUEUE"]["FAILURE_TTL"],
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
    )


_cache: IndexNowSettings | None = None


def get_settings() -> IndexNowSettings:
    """The current settings; raises :class:`IndexNowConfigError` when they are invalid."""
    global _cache
    if _cache is None:
        problems = validate()
        if problems:
            details = "; ".join(f"{p.msg} ({p.id})" for p in problems)
            raise IndexNowConfigError(f"settings.INDEXNOW is invalid: {details}")
        _cache = _build(getattr(django_settings, "INDEXNOW", {}))
    return _cache


def is_enabled() -> bool:
    """``INDEXNOW['ENABLED']`` without requiring the rest to be valid."""
    raw = getattr(django_settings, "INDEXNOW", None)
    if not isinstance(raw, Mapping):
        return True
    return raw.get("ENABLED", True) is not False


def clear_cache(**kwargs: Any) -> None:
    """Forget the cached settings (connected to ``setting_changed``)."""
    global _cache
    if kwargs.get("setting") in (
        None,
        "INDEXNOW",
        "RQ_QUEUES",
        "CACHES",
        "SITE_ID",
        "INSTALLED_APPS",
    ):
        _cache = None
