"""The settings object: built from ``settings.INDEXNOW`` when used, cached until it changes.

:func:`get_settings` builds a frozen :class:`IndexNowSettings` from
``settings.INDEXNOW`` merged over the defaults (the user's dict is never
mutated), once :func:`~indexnow_django.conf.rules.validate` finds nothing wrong,
and caches it until the ``setting_changed`` signal says ``INDEXNOW``,
``RQ_QUEUES``, ``CACHES`` (or another setting it reads) changed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import cached_property
from typing import Any, NoReturn

from django.conf import settings as django_settings

from ..exceptions import IndexNowConfigError
from ..protocol.client import RetryPolicy
from ..protocol.masking import mask_keys
from ..protocol.normalize import normalize_url
from .declared import KEYS, TRANSPORTS, Declared
from .hosts import HostConfig, Hosts, LiveHosts
from .rules import merged, validate


class IndexNowSettings(Declared):
    """The validated, merged ``INDEXNOW`` setting: one attribute per declared key (see
    :class:`~indexnow_django.conf.declared.Declared`), frozen.

    :attr:`base_url` and :attr:`hosts` are worked out when first read: without
    ``BASE_URL`` they come from ``django.contrib.sites``, a database query that
    must not run before its table exists (system checks run before ``migrate``).
    """

    _live_hosts: LiveHosts

    def __init__(self, raw: Mapping[str, Any]) -> None:
        conf = merged(raw)
        values = self.__dict__
        for key in KEYS:
            values[key.attr] = key.value(conf)
        values["_live_hosts"] = LiveHosts()

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        shown = [
            f"{key.attr}={getattr(self, key.attr)!r}"
            for key in KEYS
            if not key.attr.startswith("_") and not key.attr.endswith("_setting")
        ]
        text = f"IndexNowSettings({', '.join(shown)}, retry={self.retry!r})"
        return mask_keys(text, self._settings_keys())

    def _settings_keys(self) -> list[str]:
        """The keys the settings name (the main one, the previous ones, those of ``HOSTS``
        as a dict), read without the hosts that come from code: what :meth:`__repr__` masks."""
        keys: list[Any] = [self.key, *self.previous_keys]
        if isinstance(self.hosts_setting, Mapping):
            for options in self.hosts_setting.values():
                if isinstance(options, Mapping):
                    keys.append(options.get("KEY"))
                    keys.extend(options.get("PREVIOUS_KEYS") or ())
        return [key for key in keys if isinstance(key, str)]

    @cached_property
    def retry(self) -> RetryPolicy:
        """``RETRY``: the delays between attempts."""
        policy = {k.path[1].lower(): getattr(self, k.attr) for k in KEYS if k.path[0] == "RETRY"}
        return RetryPolicy(**policy)

    @cached_property
    def base_url(self) -> str:
        """Scheme and host that relative URLs are joined to, without a trailing slash."""
        base_url = self.base_url_setting
        if base_url is None:
            base_url = f"https://{_sites_domain()}"
        return normalize_url(base_url).rstrip("/")

    @property
    def hosts(self) -> Hosts:
        """The hosts URLs may be submitted for, each with its key and key file; those
        that come from code are read again within seconds (see :mod:`.hosts`)."""
        return self._live_hosts.get(self)

    def reread_hosts(self) -> bool:
        """Read the hosts from code again now (a URL or a key file was asked for a host
        not among them), at most once a second; whether they changed."""
        return self._live_hosts.reread(self)

    @property
    def resolved_dispatch(self) -> str:
        """``"queue"``, ``"sync"`` or ``"tasks"``: what ``DISPATCH`` means with the current
        ``RQ_QUEUES`` (``"auto"`` never resolves to ``"tasks"``: it is chosen by name)."""
        if self.dispatch != "auto":
            return self.dispatch
        return "queue" if self.queue_name in getattr(django_settings, "RQ_QUEUES", {}) else "sync"

    @property
    def transport_path(self) -> str:
        """The dotted path of the transport class ``DISPATCH`` selects (see
        :func:`indexnow_django.transports.chosen`, which every consumer asks)."""
        return TRANSPORTS[self.resolved_dispatch]

    def host_config(self, host: str) -> HostConfig | None:
        return self.hosts.get(host)

    def serves_key(self, name: str) -> bool:
        """Whether ``/<name>.txt`` is the key file of some host: the main key, a previous
        one, or a host's. A name not among them makes the hosts be read again, at most
        once a second (a tenant added since); a set look-up otherwise."""
        if name == self.key or name in self.previous_keys:
            return True
        if name in self._served_keys():
            return True
        return self.reread_hosts() and name in self._served_keys()

    def _served_keys(self) -> frozenset[str]:
        """Every host's key and previous keys, worked out again when the hosts change."""
        hosts = self.hosts
        kept = self.__dict__.get("_served")
        if kept is None or kept[0] is not hosts:
            keys = {key for h in hosts.values() for key in (h.key, *h.previous_keys)}
            kept = self.__dict__["_served"] = (hosts, frozenset(keys))
        return kept[1]

    @property
    def keys_per_host(self) -> bool:
        """Whether some host serves other key files than the main key's (``Vary: Host``)."""
        return any(
            h.key != self.key or h.previous_keys != self.previous_keys for h in self.hosts.values()
        )

    def all_keys(self) -> list[str]:
        """Every configured key: the main one, the previous ones, each host's."""
        keys = [self.key, *self.previous_keys]
        for h in self.hosts.values():
            keys.append(h.key)
            keys.extend(h.previous_keys)
        return list(dict.fromkeys(keys))

    def mask(self, text: str) -> str:
        """``text`` with every configured key (the main one, each host's, the previous
        ones) masked."""
        return mask_keys(text, self.all_keys())


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
        _cache = IndexNowSettings(getattr(django_settings, "INDEXNOW", {}))
    if resolve_hosts:
        _cache.hosts  # noqa: B018 (resolved and kept, or IndexNowConfigError)
    return _cache


_enabled: bool | None = None


def is_enabled() -> bool:
    """``INDEXNOW['ENABLED']`` without requiring the rest to be valid (kept like the
    settings, until ``setting_changed``: every tracked save asks)."""
    global _enabled
    if _enabled is None:
        _enabled = _flag_on("ENABLED")
    return _enabled


def command_units_enabled() -> bool:
    """``INDEXNOW['COMMAND_UNITS']`` without requiring the rest to be valid: read once, when
    Django starts."""
    return _flag_on("COMMAND_UNITS")


def _flag_on(name: str) -> bool:
    """``INDEXNOW[name]``, a flag on by default, read from the raw setting: anything but
    ``False`` counts as on (the checks report a value that is not a boolean)."""
    raw = getattr(django_settings, "INDEXNOW", None)
    return not isinstance(raw, Mapping) or raw.get(name, True) is not False


#: The settings whose change :func:`clear_cache` forgets the settings for.
READ_SETTINGS = ("INDEXNOW", "RQ_QUEUES", "CACHES", "SITE_ID", "INSTALLED_APPS", "TASKS")


def clear_cache(**kwargs: Any) -> None:
    """Forget the cached settings (connected to ``setting_changed``)."""
    global _cache, _enabled
    if kwargs.get("setting") is None or kwargs["setting"] in READ_SETTINGS:
        _cache = None
        _enabled = None


def settings_fingerprint() -> dict[str, Any]:
    """What a worker records of the ``INDEXNOW`` settings it started with.

    ``fingerprint`` is a short HMAC of the merged settings keyed with ``SECRET_KEY``
    (equal settings, equal fingerprint, in every process of the site; without
    ``SECRET_KEY`` nothing of the key can be found from it); ``DRY_RUN`` and ``ENABLED``
    are kept as they are, so ``indexnow_check`` can say what a difference means.
    """
    import json

    from django.utils.crypto import salted_hmac

    def stable(value: Any) -> str:
        # A function or a class by its dotted name: its repr holds an address that differs
        # between processes.
        name = getattr(value, "__qualname__", None)
        if callable(value) and name:
            return f"{getattr(value, '__module__', '')}.{name}"
        return repr(value)

    raw = getattr(django_settings, "INDEXNOW", None)
    conf = merged(raw) if isinstance(raw, Mapping) else {"INDEXNOW": repr(raw)}
    text = json.dumps(conf, sort_keys=True, default=stable)
    # Keyed with SECRET_KEY: the settings hold the key, and a hash anyone can compute
    # would let a short key be found by hashing guesses.
    digest = salted_hmac("indexnow_django.settings_fingerprint", text, algorithm="sha256")
    return {
        "fingerprint": digest.hexdigest()[:12],
        "DRY_RUN": conf.get("DRY_RUN"),
        "ENABLED": conf.get("ENABLED"),
    }
