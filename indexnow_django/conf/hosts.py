"""The hosts URLs may be submitted for, read again within seconds by every process.

``HOSTS`` may name a function (a dotted path) that returns them, and installed
apps may add theirs (an app config's ``indexnow_hosts()``): a tenant added at
run time is then served and submitted without a restart. :class:`LiveHosts`
keeps what one settings object last read and reads it again when
:data:`HOSTS_REFRESH_SECONDS` have passed, or sooner (at most once per
:data:`HOSTS_REREAD_SECONDS`) when a host is asked for that is not among them.
Hosts that come from the settings alone are read once. A host that cannot be
public (``localhost``, a private address, a fresh Site's ``example.com``) is left
out wherever it came from, and named (:class:`Hosts`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol
from urllib.parse import urlsplit

from django.utils.module_loading import import_string

from ..exceptions import IndexNowConfigError
from ..protocol.masking import mask_keys
from ..protocol.normalize import InvalidURL, normalize_host, not_public_reason
from .rules import host_options


class _Settings(Protocol):
    """What the host registry reads of the settings object."""

    @property
    def base_url(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def key_location(self) -> str | None: ...
    @property
    def previous_keys(self) -> tuple[str, ...]: ...
    @property
    def base_url_setting(self) -> str | None: ...
    @property
    def hosts_setting(self) -> Any: ...
    @property
    def dry_run(self) -> bool: ...
    @property
    def allow_private_hosts(self) -> bool: ...


logger = logging.getLogger(__name__)

#: Seconds a process keeps the hosts that come from code (``HOSTS`` as a dotted
#: path to a callable, an app config's ``indexnow_hosts()``) before it reads
#: them again: a tenant added at run time is served and submitted within that
#: time by every process, without a restart, for one call at most that often.
HOSTS_REFRESH_SECONDS = 5.0
#: Seconds, at least, between two reads of those hosts forced by a host not among them.
HOSTS_REREAD_SECONDS = 1.0


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

    def __repr__(self) -> str:
        keys = [self.key, *self.previous_keys]
        return (
            f"HostConfig(host={self.host!r}, key={mask_keys(self.key, keys)!r}, "
            f"key_location={self.key_location and mask_keys(self.key_location, keys)!r}, "
            f"scheme={self.scheme!r}, "
            f"previous_keys={tuple(mask_keys(k, keys) for k in self.previous_keys)!r})"
        )

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


class Hosts(dict[str, HostConfig]):
    """The hosts URLs may be submitted for, by host. :attr:`not_public` names the hosts
    configured that cannot be public, each with why and where it came from;
    :attr:`withheld`, those of them left out (all of them, unless ``DRY_RUN``)."""

    def __init__(
        self,
        entries: Mapping[str, HostConfig],
        not_public: Mapping[str, str] | None = None,
        withheld: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(entries)
        self.not_public: Mapping[str, str] = not_public or {}
        self.withheld: Mapping[str, str] = withheld or {}


class LiveHosts:
    """The hosts one settings object last read, and until when they hold."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.value: Hosts | None = None
        self.expires = 0.0
        #: Nothing is read from code: the value holds for ever.
        self.static = False
        self.problems: tuple[str, ...] = ()
        self.withheld: tuple[tuple[str, str], ...] = ()

    def get(self, conf: _Settings) -> Hosts:
        """The hosts of ``conf``; when a read fails, the last hosts read are kept (and
        the failure logged), or, on the first read, :class:`IndexNowConfigError` is
        raised."""
        value = self.value
        if value is not None and (self.static or time.monotonic() < self.expires):
            return value
        with self.lock:
            if self.value is not None and (self.static or time.monotonic() < self.expires):
                return self.value
            try:
                raw_hosts, contributed, dynamic = _read(conf)
            except Exception as exc:
                if self.value is None:
                    if isinstance(exc, IndexNowConfigError):
                        raise
                    raise IndexNowConfigError(
                        f"IndexNow could not read the hosts: {type(exc).__name__}: {exc}"
                    ) from exc
                logger.error(
                    "IndexNow could not read the hosts again (%s: %s); keeping the %d read before",
                    type(exc).__name__,
                    exc,
                    len(self.value),
                )
                self.expires = time.monotonic() + HOSTS_REFRESH_SECONDS
                return self.value
            self.value = self._entries(conf, raw_hosts, contributed)
            self.static = not dynamic
            self.expires = time.monotonic() + HOSTS_REFRESH_SECONDS
            return self.value

    def reread(self, conf: _Settings) -> bool:
        """Read the hosts from code again now; whether they changed (see
        :meth:`_Settings.reread_hosts`)."""
        before = self.value
        if before is None or self.static:
            return False
        read_at = self.expires - HOSTS_REFRESH_SECONDS
        if time.monotonic() - read_at < HOSTS_REREAD_SECONDS:
            return False
        self.expires = 0.0
        return self.get(conf) != before

    def _entries(
        self, conf: _Settings, raw_hosts: Any, contributed: list[tuple[str, str]]
    ) -> Hosts:
        base = urlsplit(conf.base_url)
        key, key_location, previous_keys = conf.key, conf.key_location, conf.previous_keys
        entries: dict[str, HostConfig] = {}
        problems: list[str] = []
        origins: dict[str, str] = {}
        if raw_hosts is None:
            origins[base.netloc] = (
                "BASE_URL" if conf.base_url_setting else "the django.contrib.sites domain"
            )
            entries[base.netloc] = HostConfig(
                base.netloc, key, key_location, previous_keys=previous_keys
            )
        else:
            for name in raw_hosts:
                options = (raw_hosts[name] if isinstance(raw_hosts, Mapping) else None) or {}
                found = list(host_options(str(name), options)) if options else []
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
                    previous = () if own_key else previous_keys
                origins.setdefault(host, "HOSTS")
                entries[host] = HostConfig(
                    host,
                    own_key or key,
                    options.get("KEY_LOCATION") or (None if own_key else key_location),
                    previous_keys=tuple(previous),
                )
        for host, origin in contributed:
            origins.setdefault(host, origin)
            entries.setdefault(host, HostConfig(host, key, None, previous_keys=previous_keys))
        if base.scheme != "https" and base.netloc in entries:
            # Engines look for the key file over https unless told: name the
            # http one in every request (``keyLocation``).
            entry = entries[base.netloc]
            entry = replace(entry, scheme=base.scheme)
            entries[base.netloc] = replace(entry, key_location=entry.key_file_url)
        if tuple(problems) != self.problems:
            self.problems = tuple(problems)
            for problem in problems:
                logger.error("IndexNow skipped a host from INDEXNOW['HOSTS']: %s", problem)
        return self._withhold(conf, entries, origins)

    def _withhold(
        self, conf: _Settings, entries: dict[str, HostConfig], origins: Mapping[str, str]
    ) -> Hosts:
        """``entries`` without the hosts that cannot be public (see
        :func:`~indexnow_django.protocol.normalize.not_public_reason`), each logged once
        with why and where it came from. ``ALLOW_PRIVATE_HOSTS`` keeps them all;
        ``DRY_RUN``, which sends nothing, keeps them in what it logs."""
        not_public = {} if conf.allow_private_hosts else hosts_not_public(entries, origins)
        withheld = {} if conf.dry_run else not_public
        for host in withheld:
            del entries[host]
        if tuple(withheld.items()) != self.withheld:
            self.withheld = tuple(withheld.items())
            for host, why in withheld.items():
                logger.warning(
                    "IndexNow will not submit URLs on host %r: it cannot be public (%s). "
                    "Give the site's public host there (see manage.py indexnow_check).",
                    host,
                    why,
                )
        return Hosts(entries, not_public, withheld)


def hosts_not_public(hosts: Iterable[str], origins: Mapping[str, str]) -> dict[str, str]:
    """``{host: "why, from where"}`` for those of ``hosts`` that cannot be public."""
    found = {}
    for host in hosts:
        why = not_public_reason(host)
        if why is not None:
            found[host] = f"{why}, from {origins.get(host, 'HOSTS')}"
    return found


def _read(conf: _Settings) -> tuple[Any, list[tuple[str, str]], bool]:
    """``(HOSTS or what its function returned, the apps' hosts, whether any is code)``."""
    raw_hosts = conf.hosts_setting
    dynamic = False
    if isinstance(raw_hosts, str):
        raw_hosts = _call_hosts(raw_hosts)
        dynamic = True
    contributed, hooked = _contributed_hosts()
    return raw_hosts, contributed, dynamic or hooked


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


def _contributed_hosts() -> tuple[list[tuple[str, str]], bool]:
    """``(host, where from)`` for the hosts that installed apps allow besides ``HOSTS``
    (with the default key): an app config's ``indexnow_hosts()``, e.g.
    ``indexnow_django.contrib.wagtail``'s sites, named by its ``indexnow_hosts_origin``
    (``"a Wagtail Site"``); and whether any app has that hook."""
    from django.apps import apps

    hosts: list[tuple[str, str]] = []
    hooked = False
    for app_config in apps.get_app_configs():
        source = getattr(app_config, "indexnow_hosts", None)
        if source is not None:
            hooked = True
            origin = getattr(app_config, "indexnow_hosts_origin", None) or app_config.label
            for host in source():
                try:
                    hosts.append((normalize_host(host), origin))
                except (InvalidURL, TypeError, AttributeError):
                    continue
    return hosts, hooked
