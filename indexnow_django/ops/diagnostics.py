"""What ``manage.py indexnow_check`` finds: can delivery work with these settings?

:func:`diagnose` gathers :class:`Finding` objects, each marked OK, WARN or
FAIL, grouped in sections (settings, dispatch, queue, workers, engines, hosts
and key files, debounce cache, registered models, jobs). The command prints
them for a person or as JSON for monitoring; delivery can work when there is
no FAIL (warnings allowed).

Everything here only reads: Redis with short socket timeouts, key files with
one ``GET`` each, each engine's endpoint with a ``GET`` that carries no URL
and no key (:func:`probe_engine`). Nothing is ever submitted to an engine, and the
key is never shown in full (:func:`~indexnow_django.conf.mask_key`).
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from django.core import checks

from ..conf import IndexNowSettings, get_settings, validate
from ..exceptions import IndexNowConfigError
from ..protocol.client import USER_AGENT, excerpt
from ..protocol.masking import mask_key, mask_url, mask_url_in
from ..transports import Transport, chosen
from .findings import (
    CHECK_SECTIONS,
    EXCERPT_CHARS,
    SECTIONS,
    WRITE_PROBE_KEY,
    Diagnosis,
    Finding,
    Status,
    StopsDelivery,
    shown,
)

logger = logging.getLogger(__name__)

__all__ = [
    "SECTIONS",
    "Diagnosis",
    "Finding",
    "Status",
    "check_key_file",
    "diagnose",
    "network_cause",
    "probe_engine",
]


# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- key files


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps: requests wraps urllib3's error, which wraps the socket's."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 20:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        wrapped = [getattr(current, "reason", None), current.__cause__, current.__context__]
        wrapped.extend(current.args)
        todo.extend(item for item in wrapped if isinstance(item, BaseException))


def network_cause(exc: BaseException, timeout: float) -> str:
    """What went wrong in a request that got no answer, in words (``connection refused``)."""
    import ssl

    causes = list(_causes(exc))

    def found(*kinds: type[BaseException]) -> BaseException | None:
        return next((cause for cause in causes if isinstance(cause, kinds)), None)

    if found(ConnectionRefusedError):
        return "connection refused (nothing listens at that address and port)"
    if found(socket.gaierror):
        return "the host name does not resolve (DNS)"
    if found(requests.Timeout, TimeoutError, socket.timeout):
        return f"no answer within {timeout:g}s (timeout)"
    if found(ConnectionResetError, ConnectionAbortedError):
        return "the connection was reset"
    tls = found(requests.exceptions.SSLError, ssl.SSLError)
    if tls is not None:
        return f"TLS failed ({excerpt(str(tls), 120)})"
    unreachable = found(OSError)
    strerror = getattr(unreachable, "strerror", None)
    if strerror:
        return str(strerror).lower()
    return f"{type(exc).__name__}: {excerpt(str(exc), 160)}"


def check_key_file(
    url: str, key: str, timeout: float
) -> tuple[Status, str, str | None, dict[str, Any]]:
    """Fetch the key file at ``url`` and compare it with ``key``.

    Returns ``(status, message, hint, data)``. Redirects are not followed:
    engines must find the key itself at the URL they are given.
    """
    data: dict[str, Any] = {"url": url}
    offline_hint = "If this machine cannot reach its own public address, run with --offline."
    try:
        response = requests.get(
            url,
            timeout=timeout,
            allow_redirects=False,
            headers={"User-Agent": USER_AGENT, "Accept": "text/plain"},
        )
    except requests.RequestException as exc:
        cause = network_cause(exc, timeout)
        data.update(error=str(exc), cause=cause)
        site = urlsplit(url)
        return (
            Status.FAIL,
            f"key file {url} could not be fetched: {cause}",
            f"Is the site running at {site.scheme}://{site.netloc}? That is where BASE_URL (or "
            "KEY_LOCATION) puts the key file. " + offline_hint,
            data,
        )
    status = response.status_code
    content_type = response.headers.get("Content-Type", "")
    body = response.content[:2048].decode("utf-8", errors="replace").lstrip("\ufeff")
    data.update(http_status=status, content_type=content_type)
    if 300 <= status < 400:
        location = urljoin(url, response.headers.get("Location", ""))
        data["location"] = location
        return (
            Status.FAIL,
            f"key file {url} answered {status}, a redirect to {location}, instead of the key",
            "Engines do not follow redirects to the key file: serve it at this URL, or set "
            "KEY_LOCATION to the final URL (on the same host).",
            data,
        )
    if status != 200:
        return (
            Status.FAIL,
            f"key file {url} answered {status} {response.reason or ''}".rstrip()
            + f" with {shown(body)}",
            'Add path("", include("indexnow_django.urls")) to your URLconf, or serve the file '
            "at KEY_LOCATION. " + offline_hint,
            data,
        )
    text = body.strip()
    if text == key:
        if "text/plain" not in content_type.lower():
            return (
                Status.WARN,
                f"key file {url}: 200, matches the key, but is served as "
                f"{content_type or 'no type'}",
                "Serve it as text/plain; charset=utf-8.",
                data,
            )
        return Status.OK, f"key file {url}: 200, matches the key", None, data
    if "html" in content_type.lower() or text.lower().startswith(("<!doctype", "<html", "<")):
        return (
            Status.FAIL,
            f"key file {url} answered 200 with an HTML page ({excerpt(text, EXCERPT_CHARS)!r}) "
            "instead of the key",
            "A catch-all route or a front-end fallback answers this URL: put "
            'path("", include("indexnow_django.urls")) before it.',
            data,
        )
    return (
        Status.FAIL,
        f"key file {url} answered 200 with {shown(body)} instead of the key {mask_key(key)}",
        "The file must contain exactly the key (surrounding whitespace is ignored).",
        data,
    )


# --------------------------------------------------------------------------- engines


def probe_engine(endpoint: str, timeout: float) -> tuple[Status, str, str | None, dict[str, Any]]:
    """Whether an IndexNow endpoint is there, without submitting anything.

    One ``GET`` of the endpoint with no ``url`` and no ``key``: an engine answers
    it with an error of its own (400, 405, 422...), which says it is there. Only when
    that is a 404 is it asked once more the way submissions ask, a ``POST``, of an
    empty JSON object (no host, no key, no URL: nothing to accept), in case it routes
    POSTs alone; a 404 to both says that the path is wrong. No answer at all (a name
    that does not resolve, a refused connection, TLS that fails) says that the host or
    port is. Redirects are not followed: a POST sent there would be redirected too,
    without its body. Bodies are not read. Returns ``(status, message, hint, data)``,
    the endpoint masked (:func:`mask_url`).
    """
    shown_url = mask_url(endpoint)
    data: dict[str, Any] = {"endpoint": shown_url}
    check_hint = (
        "Check the host, port and path of this endpoint in ENGINES (a name such as "
        "'indexnow' or 'bing' gives the documented endpoint)."
    )

    def ask(method: str, **body: Any) -> int:
        with requests.request(
            method,
            endpoint,
            timeout=timeout,
            allow_redirects=False,
            headers={"User-Agent": USER_AGENT},
            stream=True,
            **body,
        ) as answer:
            location.append(answer.headers.get("Location", ""))
            return answer.status_code

    location: list[str] = []
    try:
        status = ask("GET")
        if status == 404:
            with contextlib.suppress(requests.RequestException):
                status = ask("POST", json={})
    except requests.RequestException as exc:
        cause = mask_url_in(network_cause(exc, timeout), endpoint)
        data.update(cause=cause, reachable=False)
        nowhere = (ConnectionRefusedError, socket.gaierror, requests.exceptions.SSLError)
        if any(isinstance(cause_, nowhere) for cause_ in _causes(exc)):
            return (
                Status.FAIL,
                f"{shown_url} cannot be reached: {cause}",
                check_hint + " If this machine cannot reach the engines, run with --offline.",
                data,
            )
        return (
            Status.WARN,
            f"{shown_url} did not answer: {cause}; POSTs may fail the same way",
            "If this machine cannot reach the engines, run with --offline.",
            data,
        )
    data.update(http_status=status, reachable=True)
    if status == 404:
        return (
            Status.FAIL,
            f"{shown_url} answered 404 Not Found: there is no IndexNow endpoint at that path",
            check_hint,
            data,
        )
    if 300 <= status < 400:
        target = mask_url(urljoin(endpoint, location[-1]))
        data["location"] = target
        return (
            Status.WARN,
            f"{shown_url} answered {status}, a redirect to {target}: a POST redirected "
            "there loses its URLs",
            "Put the final URL in ENGINES.",
            data,
        )
    asked = "a GET" if len(location) == 1 else "a POST"
    return (
        Status.OK,
        f"{shown_url} is there ({asked} without URLs answered {status})",
        None,
        data,
    )


# --------------------------------------------------------------------------- sections


def _check_findings(diag: Diagnosis) -> None:
    """The findings of the system checks (``manage.py check``), each in its section.

    Errors fail delivery; warnings are warnings, except those that stop it
    (:class:`~indexnow_django.ops.findings.StopsDelivery`). Checks silenced by
    ``SILENCED_SYSTEM_CHECKS`` are left out here too.
    """
    for message in checks.run_checks(tags=["indexnow"]):
        if message.is_silenced():
            continue
        if message.is_serious() or isinstance(message, StopsDelivery):
            status = Status.FAIL
        elif message.level >= checks.WARNING:
            status = Status.WARN
        else:
            status = Status.OK
        diag.add(
            CHECK_SECTIONS.get(message.id or "", "settings"),
            status,
            f"{message.id}: {message.msg}",
            message.hint,
            id=message.id,
        )


def _settings_section(diag: Diagnosis) -> IndexNowSettings | None:
    """The settings, when they are valid and give a base URL; else ``None``."""
    if validate():
        return None  # the checks' errors say why
    try:
        conf = get_settings()
    except IndexNowConfigError as exc:
        diag.add("settings", Status.FAIL, str(exc))
        return None
    diag.mask = conf.mask
    diag.add(
        "settings",
        Status.OK,
        f"settings.INDEXNOW is valid: key {mask_key(conf.key)}, base URL {conf.base_url}",
        key=mask_key(conf.key),
        base_url=conf.base_url,
    )
    if not conf.enabled:
        diag.add(
            "settings",
            Status.WARN,
            "ENABLED is False: nothing is collected or sent",
            "Remove 'ENABLED': False (or set it to True) where pages should be submitted.",
        )
    if conf.dry_run:
        diag.add(
            "settings",
            Status.WARN,
            "DRY_RUN is True: requests to engines are logged, not sent",
            "Remove 'DRY_RUN': True in production, then restart the workers with the web "
            "processes: a worker goes on with the settings it started with.",
        )
    return conf


def _dispatch_section(diag: Diagnosis, conf: IndexNowSettings) -> Transport:
    transport = chosen(conf)
    mode = transport.name
    reason = transport.chosen_because()
    if reason is not None:
        message = f"DISPATCH 'auto' resolved to '{mode}' ({reason})"
    else:
        message = f"DISPATCH '{mode}'"
    message += f": {transport.how_flushes_go}"
    diag.add("dispatch", Status.OK, message, setting=conf.dispatch, resolved=mode)
    return transport


def _engines_section(
    diag: Diagnosis, conf: IndexNowSettings, *, offline: bool, timeout: float
) -> None:
    probed: dict[str, Any] = {}
    if not offline and conf.engines:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(
            max_workers=len(conf.engines), thread_name_prefix="indexnow-check"
        ) as pool:
            futures = {
                engine.endpoint: pool.submit(probe_engine, engine.endpoint, timeout)
                for engine in conf.engines
            }
            probed = {endpoint: future.result() for endpoint, future in futures.items()}
    for engine in conf.engines:
        endpoint = mask_url(engine.endpoint)
        name = mask_url("//" + engine.name).lstrip("/")
        if engine.endpoint not in probed:
            diag.add("engines", Status.OK, f"{name}: {endpoint}", name=name, endpoint=endpoint)
            continue
        status, message, hint, data = probed[engine.endpoint]
        diag.add("engines", status, f"{name}: {message}", hint, name=name, **data)
    per_minute = conf.throttle_per_minute
    if per_minute is None:
        diag.add(
            "engines",
            Status.OK,
            "throttle: none (THROTTLE['MAX_REQUESTS_PER_MINUTE'] is None)",
            throttle=None,
        )
    else:
        what = (
            f"throttle: at most {per_minute} POSTs a minute per engine, one every "
            f"{60 / per_minute:g}s"
        )
        reach = _cache_reach(conf.debounce_cache)
        alias = conf.debounce_cache
        if reach.error is not None:
            diag.add(
                "engines",
                Status.WARN,
                f"{what}, kept in the cache {alias!r} ({reach.backend}), which cannot be "
                f"reached ({reach.error}): POSTs go out unthrottled",
                "Start the cache's server, or fix CACHES[DEBOUNCE['CACHE']].",
                throttle=per_minute,
                cache=alias,
                reachable=False,
                shared=reach.shared,
            )
        else:
            diag.add(
                "engines",
                Status.OK,
                f"{what}, kept in the cache {alias!r} ({reach.backend}): {reach.throttle}",
                throttle=per_minute,
                cache=alias,
                reachable=True,
                shared=reach.shared,
            )


#: Key files fetched at once by ``indexnow_check``: a site with hundreds of
#: tenant hosts is checked in a few rounds of ``HTTP["TIMEOUT"]`` at most.
KEY_FILE_FETCHES = 32


def _hosts_section(
    diag: Diagnosis, conf: IndexNowSettings, *, offline: bool, timeout: float
) -> None:
    for host, why in conf.hosts.not_public.items():
        diag.add(
            "hosts",
            Status.FAIL,
            f"{host}: cannot be public ({why}): its URLs are never sent to an engine",
            "Give the site's public host there (BASE_URL, HOSTS, the Site's domain). A site "
            "whose engine is on its own network sets INDEXNOW['ALLOW_PRIVATE_HOSTS'].",
            host=host,
        )
    hosts = list(conf.hosts.items())
    fetched: dict[str, Any] = {}
    if not offline and hosts:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(
            max_workers=min(KEY_FILE_FETCHES, len(hosts)), thread_name_prefix="indexnow-check"
        ) as pool:
            futures = {
                host: pool.submit(check_key_file, host_conf.key_file_url, host_conf.key, timeout)
                for host, host_conf in hosts
            }
            fetched = {host: future.result() for host, future in futures.items()}
    for host, host_conf in hosts:
        url = host_conf.key_file_url
        diag.add(
            "hosts",
            Status.OK,
            f"{host}: key {mask_key(host_conf.key)}, key file {url}",
            host=host,
            key=mask_key(host_conf.key),
            key_file_url=url,
        )
        if host_conf.previous_keys:
            previous = [mask_key(key) for key in host_conf.previous_keys]
            diag.add(
                "hosts",
                Status.OK,
                f"{host}: previous key(s) {', '.join(previous)}: their key files are still "
                "served, nothing is sent with them (PREVIOUS_KEYS)",
                host=host,
                previous_keys=previous,
            )
        location_host = urlsplit(url).netloc.lower()
        if host_conf.key_location and location_host != host:
            diag.add(
                "hosts",
                Status.WARN,
                f"{host}: the key file is on another host ({location_host}); engines look for it "
                "on the host whose URLs are submitted",
                "Serve the key file on the same host, or leave KEY_LOCATION unset.",
                host=host,
            )
        if offline:
            continue
        status, message, hint, data = fetched[host]
        diag.add("hosts", status, message, hint, host=host, **data)
    if offline:
        diag.add("hosts", Status.OK, "key files not fetched (--offline)")


@dataclass(frozen=True)
class _CacheReach:
    backend: str
    #: Whether every process reads the same entries (``None``: files, on one machine).
    shared: bool | None
    #: What that means for the throttle's budget.
    throttle: str
    #: Why the cache cannot be reached, or ``None``.
    error: str | None


def _cache_reach(alias: str) -> _CacheReach:
    """Whether the cache ``alias`` is shared, and whether it can be reached now (one read,
    at most a couple of seconds on a Redis that does not answer)."""
    from django.core.cache import caches
    from django.core.cache.backends.dummy import DummyCache
    from django.core.cache.backends.filebased import FileBasedCache
    from django.core.cache.backends.locmem import LocMemCache

    from ..compat import redis_cache_client

    cache = caches[alias]
    backend = type(cache).__qualname__
    if isinstance(cache, DummyCache):
        return _CacheReach(backend, False, "it keeps nothing, so nothing is throttled", None)
    if isinstance(cache, LocMemCache):
        return _CacheReach(
            backend, False, "per process, each process (worker) keeps a budget of its own", None
        )
    shared: bool | None = None if isinstance(cache, FileBasedCache) else True
    throttle = (
        "shared by the processes of this machine"
        if shared is None
        else "shared by every process that uses this cache"
    )
    try:
        client = redis_cache_client(cache)
        if client is not None:
            client[0].ping()
        else:
            cache.get(WRITE_PROBE_KEY)
    except Exception as exc:
        return _CacheReach(backend, shared, throttle, excerpt(str(exc) or repr(exc), 120))
    return _CacheReach(backend, shared, throttle, None)


def _debounce_section(diag: Diagnosis, conf: IndexNowSettings, worker_hosts: Sequence[str]) -> None:
    """The debounce cache; the checks say when it cannot be shared (LocMem, Dummy).

    Only a file-based cache needs the workers' host names to tell.
    """
    from django.core.cache import caches
    from django.core.cache.backends.dummy import DummyCache
    from django.core.cache.backends.filebased import FileBasedCache
    from django.core.cache.backends.locmem import LocMemCache

    alias = conf.debounce_cache
    if conf.debounce_ttl == 0:
        diag.add(
            "debounce",
            Status.OK,
            "debouncing is disabled (DEBOUNCE['TTL'] is 0)",
            cache=alias,
            ttl=0,
        )
        return
    cache = caches[alias]
    backend = f"{type(cache).__module__}.{type(cache).__qualname__}"
    base = f"cache {alias!r} ({backend}), TTL {conf.debounce_ttl}s"
    data: dict[str, Any] = {"cache": alias, "backend": backend, "ttl": conf.debounce_ttl}
    if isinstance(cache, DummyCache):
        diag.add("debounce", Status.OK, f"{base}: stores nothing", shared=False, **data)
        return
    if isinstance(cache, LocMemCache):
        diag.add("debounce", Status.OK, f"{base}: per process", shared=False, **data)
        return
    if isinstance(cache, FileBasedCache):
        here = socket.gethostname()
        elsewhere = sorted({host for host in worker_hosts if host != here})
        if elsewhere:
            diag.add(
                "debounce",
                Status.WARN,
                f"{base}: files on {here}, which workers on {', '.join(elsewhere)} cannot share",
                "Point DEBOUNCE['CACHE'] at a cache every process reaches (Redis, Memcached, "
                "the database cache).",
                shared=False,
                **data,
            )
        else:
            diag.add(
                "debounce",
                Status.OK,
                f"{base}: shared by the processes of this machine ({here})",
                shared=True,
                **data,
            )
        return
    reach = _cache_reach(alias)
    if reach.error is not None:
        diag.add(
            "debounce",
            Status.WARN,
            f"{base}: cannot be reached ({reach.error}): nothing is debounced while it is "
            "down, so an engine may receive a URL again",
            "Start the cache's server, or point DEBOUNCE['CACHE'] at a cache every process "
            "reaches.",
            shared=True,
            reachable=False,
            **data,
        )
        return
    diag.add(
        "debounce",
        Status.OK,
        f"{base}: shared with workers, reachable",
        shared=True,
        reachable=True,
        **data,
    )


def _models_section(diag: Diagnosis) -> None:
    from django.apps import apps

    from ..tracking import ModelIndexNow, registry

    # Pages that an installed app tracks with no registration (Wagtail's, django CMS's).
    found = (getattr(app, "indexnow_tracked", None) for app in apps.get_app_configs())
    tracked = [str(pages) for pages in found if pages]
    for pages in tracked:
        diag.add("models", Status.OK, pages, tracked=pages)
    if not registry and not tracked:
        diag.add(
            "models",
            Status.WARN,
            "no model is registered: only URLs submitted by hand are sent",
            "Register models in <app>/indexnow.py: @register(Post) above a ModelIndexNow subclass.",
            models=[],
        )
        return
    for model, options in sorted(registry.items(), key=lambda item: item[0]._meta.label):
        fields = getattr(options, "fields", None)
        publish_at = getattr(options, "publish_at", None)
        custom = [
            name
            for name in ("is_published", "urls")
            if getattr(type(options), name, None) is not getattr(ModelIndexNow, name, None)
        ]
        parts = [
            f"fields={', '.join(fields) if fields else 'any'}",
            f"publish_at={publish_at or '-'}",
            f"custom {', '.join(custom)}" if custom else "default is_published and urls",
        ]
        diag.add(
            "models",
            Status.OK,
            f"{model._meta.label} ({type(options).__qualname__}): {'; '.join(parts)}",
            model=model._meta.label,
            options=type(options).__qualname__,
            fields=list(fields) if fields else None,
            publish_at=publish_at,
            custom=custom,
        )


def _contributed_sections(diag: Diagnosis) -> None:
    """Findings of installed apps: an app config's ``indexnow_diagnostics()`` yields
    ``(section, status, message, data)``, e.g. ``indexnow_django.contrib.wagtail``'s sites."""
    from django.apps import apps

    for app_config in apps.get_app_configs():
        source = getattr(app_config, "indexnow_diagnostics", None)
        if source is not None:
            for section, status, message, data in source():
                diag.add(section, Status(status), message, **data)


def _pending_section(diag: Diagnosis, conf: IndexNowSettings | None) -> None:
    """URLs kept in the database because no queue could take them, or because the settings
    of the process that flushed them were invalid (see :mod:`.sending.pending`)."""
    from django.db import DatabaseError
    from django.db.models import Count, Min
    from django.utils import timezone

    from ..sending.pending import SETTINGS_INVALID, PendingSubmission

    table = PendingSubmission._meta.db_table
    unsettled = PendingSubmission.objects.filter(reason__startswith=SETTINGS_INVALID)
    try:
        rows = PendingSubmission.objects.aggregate(count=Count("pk"), oldest=Min("kept_at"))
        urls = sum(
            len([url for url in text.split(PendingSubmission.SEPARATOR) if url])
            for text in unsettled.values_list("urls", flat=True).iterator()
        )
        latest = unsettled.order_by("-kept_at", "-pk").values_list("reason", "kept_at").first()
    except DatabaseError as exc:
        diag.add(
            "jobs",
            Status.WARN,
            f"the submissions waiting in the database (table {table}) could not be read: "
            f"{excerpt(str(exc), 120)}",
            "Run manage.py migrate.",
        )
        return
    command = (
        f"python manage.py rqworker {conf.queue_name if conf is not None else 'default'} "
        "--with-scheduler"
    )
    if latest is not None:
        reason, kept_at = latest
        diag.add(
            "jobs",
            Status.FAIL,
            f"{urls} URL(s) kept in the database (table {table}), not sent, because the "
            "settings were invalid in the process that flushed them (the latest "
            f"{(timezone.now() - kept_at).total_seconds():.0f}s ago): {reason}",
            "Fix settings.INDEXNOW where every process reads it and restart the web "
            "processes; a worker of class indexnow_django.worker.Worker with valid settings "
            f"sends the kept URLs: {command}",
            kept_unsent=urls,
        )
    count = rows["count"] - unsettled.count() if latest is not None else rows["count"]
    if not count:
        if latest is None:
            diag.add("jobs", Status.OK, f"no URLs wait in the database (table {table})", pending=0)
        return
    age = (timezone.now() - rows["oldest"]).total_seconds()
    diag.add(
        "jobs",
        Status.WARN,
        f"{count} submission(s) wait in the database (table {table}, the oldest kept "
        f"{age:.0f}s ago): URLs that no queue could take and the web process could not "
        "deliver",
        "A worker of class indexnow_django.worker.Worker queues them once Redis takes jobs: "
        f"{command}",
        pending=count,
    )


def diagnose(*, offline: bool = False, http_timeout: float | None = None) -> Diagnosis:
    """Check everything delivery depends on; see the module docstring."""
    diag = Diagnosis()
    conf = _settings_section(diag)
    _check_findings(diag)
    if conf is None:
        _pending_section(diag, None)
        return diag
    transport = _dispatch_section(diag, conf)
    timeout = http_timeout if http_timeout is not None else conf.http_timeout
    _engines_section(diag, conf, offline=offline, timeout=timeout)
    worker_hosts = transport.diagnose(diag)
    _hosts_section(diag, conf, offline=offline, timeout=timeout)
    _debounce_section(diag, conf, worker_hosts)
    _models_section(diag)
    _contributed_sections(diag)
    _pending_section(diag, conf)
    from .health import findings

    for level, message, hint, data in findings(conf):
        diag.add("health", Status(level), message, hint, **data)
    return diag
