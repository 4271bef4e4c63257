"""What a valid ``settings.INDEXNOW`` is: :func:`validate`, the single place that knows.

The declared keys check themselves (:meth:`.declared.Key.problems`); here are the
rules that need code (``KEY``, ``PREVIOUS_KEYS``, ``BASE_URL``, ``HOSTS``,
``ENGINES``, ``DEBOUNCE["CACHE"]``, ``RETRY`` as a whole). What a transport needs
of its own app's settings (``RQ_QUEUES``, ``TASKS``) is checked by the transport.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings as django_settings
from django.utils.module_loading import import_string

from ..protocol.client import resolve_engine
from ..protocol.masking import mask_key
from ..protocol.normalize import InvalidURL, normalize_host
from .declared import (
    DEFAULTS,
    E_CRAWL,
    KEYS,
    NESTED,
    Problem,
    is_absolute_url,
    is_number,
    is_whole,
    where,
)
from .dispatch import DISPATCH_RULES

#: A key, whole: matched with ``fullmatch`` (``$`` would let a final line break through).
KEY_RE = re.compile(r"[A-Za-z0-9-]{8,128}")
_KEY_CHAR = re.compile(r"[A-Za-z0-9-]")

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

Rule = Callable[[Mapping[str, Any]], Iterator[Problem]]

KEY_HINT = "manage.py indexnow_key prints a new random key."
NEW_KEY = "manage.py indexnow_key prints a new key."
NOT_A_KEY = "8 to 128 characters of A-Z, a-z, 0-9 and '-'"
ENGINES_HINT = "Known names: indexnow, bing, yandex, naver, seznam, yep."


def merged(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` over :data:`DEFAULTS`, the nested dicts key by key; ``raw`` is not changed."""
    # The defaults hold strings, numbers and lists of strings: copies one level deep.
    result = {name: copy.copy(value) for name, value in DEFAULTS.items()}
    for name, value in raw.items():
        if isinstance(DEFAULTS.get(name), dict) and isinstance(value, Mapping):
            result[name] = {**DEFAULTS[name], **value}
        else:
            result[name] = copy.deepcopy(value)
    return result


def validate(raw: Any = None) -> list[Problem]:
    """Every problem with ``raw`` (default: ``settings.INDEXNOW``), in a stable order."""
    if raw is None:
        raw = getattr(django_settings, "INDEXNOW", None)
    if not isinstance(raw, Mapping):
        example = 'INDEXNOW = {"KEY": "...", "BASE_URL": "https://www.example.com"}'
        if raw is None:
            msg, hint = "is missing", f"Add {example} to your settings; {NEW_KEY}"
        else:
            msg, hint = f"must be a dict, not {type(raw).__name__}", f"Use {example}."
        return [Problem("indexnow.E001", f"settings.INDEXNOW {msg}.", hint)]
    problems = list(_unknown("INDEXNOW", raw, DEFAULTS))
    conf = merged(raw)
    problems.extend(_keys(conf, nested=False))
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
            problems.extend(_unknown(where(name), value, DEFAULTS[name]))
    if not bad:
        problems.extend(_keys(conf, nested=True))
    return problems


def _keys(conf: Mapping[str, Any], *, nested: bool) -> Iterator[Problem]:
    """The problems of the top-level keys, or of the nested ones, in the order declared;
    a dict's rules that look further after its keys."""
    section = None
    for key in KEYS:
        if (len(key.path) == 2) != nested:
            continue
        if nested and key.path[0] != section:
            if section in NESTED_RULES:
                yield from NESTED_RULES[section](conf)
            section = key.path[0]
        value = conf[key.path[0]] if not nested else conf[key.path[0]][key.path[1]]
        yield from key.problems(value)
        if key.path in RULES:
            yield from RULES[key.path](conf)
    if section in NESTED_RULES:
        yield from NESTED_RULES[section](conf)


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


def valid_key(value: Any) -> bool:
    """Whether ``value`` is a key: 8 to 128 characters of ``[A-Za-z0-9-]`` and nothing else."""
    return isinstance(value, str) and KEY_RE.fullmatch(value) is not None


def key_fault(value: Any) -> str:
    """What makes ``value`` no key, said without showing it: ``"it ends with a line break"``."""
    if not isinstance(value, str):
        return f"it is {type(value).__name__}, not a string"
    trailing = value[len(value.rstrip()) :]
    if "\n" in trailing or "\r" in trailing:
        return "it ends with a line break (as a file read whole gives it: strip it)"
    if trailing:
        return "it ends with white space"
    if value != value.lstrip():
        return "it starts with white space"
    bad = sorted({char for char in value if not _KEY_CHAR.fullmatch(char)})
    if bad:
        return f"it holds {', '.join(map(repr, bad[:5]))}"
    return f"it has {len(value)} characters"


def _not_a_key(value: Any) -> str:
    """How a message names a value that is no key: masked, as any key is shown."""
    return mask_key(value.strip()) if isinstance(value, str) else repr(value)


def _sites_installed() -> bool:
    from django.apps import apps

    return apps.is_installed("django.contrib.sites")


# --------------------------------------------------------------------------- the keys


def _rule_keys(conf: Mapping[str, Any]) -> Iterator[Problem]:
    """``KEY`` and ``PREVIOUS_KEYS`` (each compared with it)."""
    if conf["KEY"] is None:
        yield Problem("indexnow.E003", "INDEXNOW['KEY'] is required.", KEY_HINT)
    yield from _key_set("INDEXNOW", {**conf, "KEY_LOCATION": None}, top=True)


def _key_set(place: str, options: Mapping[str, Any], top: bool = False) -> Iterator[Problem]:
    """The problems of a ``KEY``, its ``PREVIOUS_KEYS`` and its ``KEY_LOCATION``, set at
    the ``top`` or for one host (whose ``PREVIOUS_KEYS`` may be ``None``: the main key's)."""
    key = options.get("KEY")
    if key is not None and not valid_key(key):
        yield Problem(
            "indexnow.E004",
            f"{place}['KEY'] {_not_a_key(key)} must be {NOT_A_KEY}: {key_fault(key)}.",
            KEY_HINT,
        )
    elif key in DOCUMENTED_KEYS:
        yield Problem(
            "indexnow.E020",
            f"{place}['KEY'] is the example key from the documentation: anyone can read it, "
            "and the engines would take submissions signed with it for yours.",
            f"Make your own with manage.py indexnow_key and put it in {place}['KEY'].",
        )
    location = options.get("KEY_LOCATION")
    if location is not None and not is_absolute_url(location):
        yield Problem(
            "indexnow.E005", f"{place}['KEY_LOCATION'] must be an absolute http(s) URL or None."
        )
    previous = options.get("PREVIOUS_KEYS")
    if previous is None and not top:
        return
    previous_place = f"{place}['PREVIOUS_KEYS']"
    hint = (
        "List the keys being rotated out, e.g. ['<old key>']: their key files stay served "
        "while engines may still check submissions made with them."
    )
    if isinstance(previous, (str, bytes)) or not isinstance(previous, (list, tuple)):
        kind = type(previous).__name__
        yield Problem(
            "indexnow.E021", f"{previous_place} must be a list of keys, not {kind}.", hint
        )
        return
    for old in previous:
        if not valid_key(old):
            yield Problem(
                "indexnow.E021",
                f"{previous_place} holds {_not_a_key(old)}, which is not {NOT_A_KEY}: "
                f"{key_fault(old)}.",
                hint,
            )
        elif old == key:
            yield Problem(
                "indexnow.E021",
                f"{previous_place} holds the current key {mask_key(old)}.",
                "A key is either current (KEY) or being rotated out (PREVIOUS_KEYS): remove "
                "it from PREVIOUS_KEYS.",
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
    if is_absolute_url(base_url):
        parts = urlsplit(base_url)
        if parts.path in ("", "/") and not parts.query and not parts.fragment:
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
            yield from host_options(host, hosts[host])


def host_options(host: str, options: Any) -> Iterator[Problem]:
    """The problems of one ``HOSTS`` entry's ``{"KEY": ..., "KEY_LOCATION": ...}``."""
    options = options if options is not None else {}
    place = where("HOSTS", host)
    allowed = {"KEY": None, "KEY_LOCATION": None, "PREVIOUS_KEYS": None}
    if not isinstance(options, Mapping):
        yield Problem(
            "indexnow.E008",
            f"{place} must be a dict with 'KEY', 'KEY_LOCATION' and 'PREVIOUS_KEYS' "
            "(all optional).",
        )
        return
    yield from _unknown(place, options, allowed)
    yield from _key_set(place, options)


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


# --------------------------------------------------------------------------- other settings


def _rule_debounce_cache(conf: Mapping[str, Any]) -> Iterator[Problem]:
    alias = conf["DEBOUNCE"]["CACHE"]
    caches = getattr(django_settings, "CACHES", {}) or {}
    if not isinstance(alias, str) or alias not in caches:
        yield Problem(
            "indexnow.E017",
            f"INDEXNOW['DEBOUNCE']['CACHE'] is {alias!r}, which is not in CACHES.",
            f"Use one of: {', '.join(map(repr, caches)) or '(no cache configured)'}.",
        )


def _rule_retry_overflow(conf: Mapping[str, Any]) -> Iterator[Problem]:
    attempts, multiplier = conf["RETRY"]["MAX_ATTEMPTS"], conf["RETRY"]["MULTIPLIER"]
    if is_whole(attempts) and attempts >= 1 and is_number(multiplier) and multiplier >= 1:
        try:
            float(multiplier) ** (attempts - 1)
        except OverflowError:
            yield Problem(
                "indexnow.E015",
                f"INDEXNOW['RETRY']['MULTIPLIER'] {multiplier!r} to the power of "
                f"MAX_ATTEMPTS - 1 ({attempts - 1}) is too large to compute a delay.",
                "Lower MULTIPLIER or MAX_ATTEMPTS: every delay is capped at MAX_DELAY anyway.",
            )


def _rule_crawl(conf: Mapping[str, Any]) -> Iterator[Problem]:
    """``CRAWL["RANGES"]``, ``CRAWL["CLIENT_IP_HEADER"]`` and ``CRAWL["RESOLVER"]``."""
    from ..crawl.crawlers import CRAWLERS

    crawl = conf["CRAWL"]
    names = ", ".join(CRAWLERS)
    ranges = crawl["RANGES"]
    example = "{'bingbot': ['40.77.167.0/24']}"
    if not isinstance(ranges, Mapping):
        yield Problem(
            E_CRAWL,
            f"INDEXNOW['CRAWL']['RANGES'] must be a dict of crawler names to lists of address "
            f"ranges, not {type(ranges).__name__}.",
            f"For example {example}; crawler names: {names}.",
        )
    else:
        for name, entries in ranges.items():
            place = where("CRAWL", "RANGES", name)
            if name not in CRAWLERS:
                yield Problem(
                    E_CRAWL,
                    f"INDEXNOW['CRAWL']['RANGES'] names an unknown crawler {name!r}.",
                    f"Crawler names: {names}.",
                )
                continue
            if isinstance(entries, (str, bytes)) or not isinstance(entries, (list, tuple)):
                yield Problem(
                    E_CRAWL,
                    f"{place} must be a list of address ranges, not {type(entries).__name__}.",
                    f"For example {example}.",
                )
                continue
            for entry in entries:
                if not _is_network(entry):
                    yield Problem(
                        E_CRAWL,
                        f"{place} holds {entry!r}, which is not an address range.",
                        "Give IPv4 or IPv6 ranges in CIDR notation, such as '40.77.167.0/24' "
                        "or '2a02:598:64:8a00::3100:0/123'.",
                    )
    header = crawl["CLIENT_IP_HEADER"]
    if header is not None and (not isinstance(header, str) or not _HEADER_RE.match(header)):
        yield Problem(
            E_CRAWL,
            f"INDEXNOW['CRAWL']['CLIENT_IP_HEADER'] must be None or a request header name, "
            f"not {header!r}.",
            "For example 'X-Forwarded-For', 'X-Real-IP' or 'CF-Connecting-IP'; None reads "
            "REMOTE_ADDR.",
        )
    resolver = crawl["RESOLVER"]
    if resolver is not None:
        try:
            found = import_string(resolver) if isinstance(resolver, str) else None
        except ImportError as exc:
            found, reason = None, f"cannot be imported ({exc})"
        else:
            reason = "is not callable" if isinstance(resolver, str) else "is not a dotted path"
        if not callable(found):
            yield Problem(
                E_CRAWL,
                f"INDEXNOW['CRAWL']['RESOLVER'] {resolver!r} {reason}.",
                "Give the dotted path of a class with reverse(address) and forward(name), or "
                "None for the system's resolver.",
            )


_HEADER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def _is_network(value: Any) -> bool:
    import ipaddress

    if not isinstance(value, str) or "/" not in value:
        return False
    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError:
        return False
    return True


#: The rules of the keys of kind ``"code"``, run where the key is declared.
#: ``PREVIOUS_KEYS`` is checked with ``KEY``.
RULES: dict[tuple[str, ...], Rule] = {
    ("KEY",): _rule_keys,
    ("BASE_URL",): _rule_base_url,
    ("HOSTS",): _rule_hosts,
    ("ENGINES",): _rule_engines,
    ("DEBOUNCE", "CACHE"): _rule_debounce_cache,
}


def _transport_rules(dispatch: str) -> Rule:
    """The rules of the ``DISPATCH`` value ``dispatch``, which look at its own app's settings
    (:mod:`indexnow_django.conf.dispatch`)."""

    def rule(conf: Mapping[str, Any]) -> Iterator[Problem]:
        if conf["DISPATCH"] == dispatch:
            yield from DISPATCH_RULES[dispatch](conf)

    return rule


#: The rules of a nested dict that look beyond its keys, run after them: the queue's and
#: the task backend's with their transports.
NESTED_RULES: dict[str | None, Rule] = {
    "QUEUE": _transport_rules("queue"),
    "RETRY": _rule_retry_overflow,
    "TASKS": _transport_rules("tasks"),
    "CRAWL": _rule_crawl,
}
