"""The settings object (``conf/``): every key a site sets reaches its attribute, the keys
declared once; and its hosts (``conf/hosts.py``), from ``HOSTS`` as a dotted path to a
callable and from apps' ``indexnow_hosts()``, read again within seconds by every process."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import FrozenInstanceError
from typing import Any

import pytest
import requests
from django.apps import apps
from django.contrib.sites.models import Site
from django.core import checks

from indexnow_django import batch
from indexnow_django import conf as conf_package
from indexnow_django.checks import check_settings
from indexnow_django.conf import get_settings
from indexnow_django.conf import hosts as live_hosts
from indexnow_django.protocol.client import RetryPolicy, resolve_engine
from indexnow_django.sending.send import deliver_now
from tests import services
from tests.needs import AT_ONCE
from tests.testapp.tenants import tenant_key

TENANTS = "tests.testapp.tenants.hosts"


# --------------------------------------------------------------------------- every key

#: Every key a site can set, a value other than its default, the attribute of the
#: settings object that holds it, and what that attribute then is.
EVERY_KEY: list[tuple[str, str | None, Any, str, Any]] = [
    ("KEY", None, "site-key-12345678", "key", "site-key-12345678"),
    ("KEY_LOCATION", None, "https://cdn.example.com/k.txt", "key_location", None),
    ("BASE_URL", None, "https://www.example.com", "base_url_setting", "https://www.example.com"),
    ("HOSTS", None, ["www.example.com", "blog.example.com"], "hosts_setting", None),
    ("ENGINES", None, ["bing", "indexnow", "bing"], "engines", None),
    ("ENABLED", None, False, "enabled", False),
    ("DRY_RUN", None, True, "dry_run", True),
    ("DISPATCH", None, "tasks", "dispatch", "tasks"),
    ("COMMAND_UNITS", None, False, "command_units", False),
    ("QUEUE", "NAME", "indexnow", "queue_name", "indexnow"),
    ("QUEUE", "DELAY", 2.5, "queue_delay", 2.5),
    ("QUEUE", "TIMEOUT", 30, "queue_timeout", 30),
    ("QUEUE", "FAILURE_TTL", 3600, "queue_failure_ttl", 3600),
    ("QUEUE", "RESULT_TTL", 600, "queue_result_ttl", 600),
    ("QUEUE", "COALESCE", 5, "queue_coalesce", 5),
    ("RETRY", "MAX_ATTEMPTS", 5, "retry", None),
    ("RETRY", "BASE_DELAY", 30, "retry", None),
    ("RETRY", "MULTIPLIER", 3.0, "retry", None),
    ("RETRY", "MAX_DELAY", 600, "retry", None),
    ("RETRY", "SERVER_ERROR_DELAY", 1, "retry", None),
    ("BATCH", "MAX_URLS", 500, "max_urls", 500),
    ("DEBOUNCE", "CACHE", "shared", "debounce_cache", "shared"),
    ("DEBOUNCE", "TTL", 0, "debounce_ttl", 0),
    ("HTTP", "TIMEOUT", 2.5, "http_timeout", 2.5),
    ("HISTORY", "ENABLED", False, "history_enabled", False),
    ("HISTORY", "RETENTION_DAYS", 3, "history_retention_days", 3),
    ("PREVIOUS_KEYS", None, ["old-key-12345678"], "previous_keys", ("old-key-12345678",)),
    ("THROTTLE", "MAX_REQUESTS_PER_MINUTE", None, "throttle_per_minute", None),
    ("TASKS", "BACKEND", "other", "tasks_backend", "other"),
    ("TASKS", "QUEUE_NAME", "indexnow", "tasks_queue", "indexnow"),
    ("PREFLIGHT", "ENABLED", True, "preflight_enabled", True),
    ("ALLOW_PRIVATE_HOSTS", None, True, "allow_private_hosts", True),
]


def test_every_key_a_site_sets_reaches_the_settings_object(settings: Any) -> None:
    raw: dict[str, Any] = {}
    for name, sub, value, _, _ in EVERY_KEY:
        if sub is None:
            raw[name] = value
        else:
            raw.setdefault(name, {})[sub] = value
    raw["KEY_LOCATION"] = "https://cdn.example.com/k.txt"
    settings.INDEXNOW = raw
    settings.TASKS = {"other": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    conf = get_settings(resolve_hosts=False)

    for name, sub, value, attr, expected in EVERY_KEY:
        if expected is not None or value is None:
            assert getattr(conf, attr) == expected, (name, sub)
    assert conf.key_location == "https://cdn.example.com/k.txt"
    assert conf.hosts_setting == ["www.example.com", "blog.example.com"]
    assert conf.engines == (resolve_engine("bing"), resolve_engine("indexnow"))
    assert conf.retry == RetryPolicy(
        max_attempts=5, base_delay=30, multiplier=3.0, max_delay=600, server_error_delay=1
    )
    # The settings object is frozen, and the site's dict is left as it was.
    with pytest.raises(FrozenInstanceError):
        conf.queue_result_ttl = 0  # type: ignore[misc]
    assert raw["QUEUE"] == {
        "NAME": "indexnow", "DELAY": 2.5, "TIMEOUT": 30, "FAILURE_TTL": 3600, "RESULT_TTL": 600,
        "COALESCE": 5,
    }  # fmt: skip


def test_the_defaults_are_the_attributes_of_a_site_that_sets_only_its_key(
    settings: Any,
) -> None:
    settings.INDEXNOW = {"KEY": "site-key-12345678", "BASE_URL": "https://www.example.com"}
    conf = get_settings(resolve_hosts=False)

    assert (conf.preflight_enabled, conf.queue_result_ttl, conf.history_enabled) == (
        False,
        0,
        True,
    )
    assert conf.throttle_per_minute == conf_package.DEFAULTS["THROTTLE"]["MAX_REQUESTS_PER_MINUTE"]
    assert conf.queue_coalesce == conf_package.DEFAULTS["QUEUE"]["COALESCE"]
    assert conf.engines == (resolve_engine("indexnow"),)
    assert conf.retry == RetryPolicy(3, 60, 2.0, 3600, 5)


def test_preflight_is_checked_like_every_other_switch(settings: Any) -> None:
    valid = {"KEY": "site-key-12345678", "BASE_URL": "https://www.example.com"}
    settings.INDEXNOW = {**valid, "PREFLIGHT": {"ENABLED": "yes"}}
    assert check_settings() == [
        checks.Error(
            "INDEXNOW['PREFLIGHT']['ENABLED'] must be True or False, not 'yes'.",
            id="indexnow.E010",
        )
    ]
    settings.INDEXNOW = {**valid, "PREFLIGHT": True}
    assert check_settings() == [
        checks.Error(
            "INDEXNOW['PREFLIGHT'] must be a dict, not bool.",
            hint="Allowed keys: ENABLED.",
            id="indexnow.E012",
        )
    ]


def test_a_cache_alias_that_is_not_a_name_is_reported_not_raised(settings: Any) -> None:
    settings.INDEXNOW = {
        "KEY": "site-key-12345678",
        "BASE_URL": "https://www.example.com",
        "DEBOUNCE": {"CACHE": ["shared"]},
    }
    assert check_settings() == [
        checks.Error(
            "INDEXNOW['DEBOUNCE']['CACHE'] is ['shared'], which is not in CACHES.",
            hint="Use one of: 'default', 'shared'.",
            id="indexnow.E017",
        )
    ]


# --------------------------------------------------------------------------- the hosts


@pytest.fixture
def quick_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live_hosts, "HOSTS_REFRESH_SECONDS", 0.3)
    monkeypatch.setattr(live_hosts, "HOSTS_REREAD_SECONDS", 0.0)


class HostsClock:
    """``time`` for the hosts' cache, its monotonic clock moved on by hand: no waiting
    out a refresh."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def monotonic(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.fixture
def hosts_clock(monkeypatch: pytest.MonkeyPatch) -> HostsClock:
    clock = HostsClock()
    monkeypatch.setattr(live_hosts, "time", clock)
    return clock


@pytest.mark.django_db
def test_a_tenant_added_at_run_time_is_submitted_with_its_own_key(
    indexnow_settings: Any, engine: Any, quick_refresh: None
) -> None:
    indexnow_settings(HOSTS=TENANTS)
    assert list(get_settings().hosts) == ["www.example.com"]

    Site.objects.create(domain="new1.tenants.test", name="new1")
    report = deliver_now(["https://new1.tenants.test/p/new-0/"])

    assert report.dropped == []
    [post] = engine.wait_for_posts(1)
    assert post.json["host"] == "new1.tenants.test"
    assert post.json["key"] == tenant_key("new1.tenants.test")
    assert post.urls == ["https://new1.tenants.test/p/new-0/"]


@pytest.mark.django_db
def test_the_hosts_are_read_again_after_a_few_seconds_not_at_each_use(
    indexnow_settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_assert_num_queries: Any,
    hosts_clock: HostsClock,
) -> None:
    monkeypatch.setattr(live_hosts, "HOSTS_REFRESH_SECONDS", 0.5)
    indexnow_settings(HOSTS=TENANTS)
    get_settings().hosts  # noqa: B018
    Site.objects.create(domain="later.tenants.test", name="later")
    with django_assert_num_queries(0):
        for _ in range(100):
            assert "later.tenants.test" not in get_settings().hosts
    hosts_clock.advance(0.6)
    assert get_settings().host_config("later.tenants.test").key == tenant_key("later.tenants.test")


def test_an_app_configs_hook_is_read_again(
    monkeypatch: pytest.MonkeyPatch, quick_refresh: None, hosts_clock: HostsClock
) -> None:
    tenants = ["one.hooked.test"]
    monkeypatch.setattr(
        apps.get_app_config("testapp"), "indexnow_hosts", lambda: tenants, raising=False
    )
    assert "one.hooked.test" in get_settings().hosts
    tenants.append("two.hooked.test")
    hosts_clock.advance(0.4)
    assert get_settings().host_config("two.hooked.test").key == get_settings().key


def test_a_failing_read_keeps_the_hosts_read_before(
    monkeypatch: pytest.MonkeyPatch,
    quick_refresh: None,
    caplog: pytest.LogCaptureFixture,
    hosts_clock: HostsClock,
) -> None:
    answers: list[Any] = [["ok.hooked.test"]]

    def hook() -> list[str]:
        if isinstance(answers[-1], Exception):
            raise answers[-1]
        return list(answers[-1])

    monkeypatch.setattr(apps.get_app_config("testapp"), "indexnow_hosts", hook, raising=False)
    assert "ok.hooked.test" in get_settings().hosts
    answers.append(ConnectionError("the tenants' database is away"))
    hosts_clock.advance(0.4)
    with caplog.at_level(logging.ERROR, logger="indexnow_django"):
        assert "ok.hooked.test" in get_settings().hosts
    assert "could not read the hosts again (ConnectionError: the tenants' database is away)" in (
        caplog.text
    )


def test_a_bad_entry_from_the_callable_is_skipped_and_logged(
    monkeypatch: pytest.MonkeyPatch, indexnow_settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.testapp import tenants

    monkeypatch.setattr(
        tenants, "hosts", lambda: {"good.tenants.test": {}, "bad.tenants.test": {"KEY": "x y"}}
    )
    indexnow_settings(HOSTS=TENANTS)
    with caplog.at_level(logging.ERROR, logger="indexnow_django"):
        assert list(get_settings().hosts) == ["good.tenants.test"]
    assert (
        "skipped a host from INDEXNOW['HOSTS']: INDEXNOW['HOSTS']['bad.tenants.test']['KEY']"
        in (caplog.text)
    )


@pytest.mark.django_db
def test_a_running_process_serves_a_new_tenants_key_file(
    client: Any, indexnow_settings: Any, quick_refresh: None
) -> None:
    indexnow_settings(HOSTS=TENANTS)
    key = tenant_key("new2.tenants.test")
    assert client.get(f"/{key}.txt", HTTP_HOST="new2.tenants.test").status_code == 404
    Site.objects.create(domain="new2.tenants.test", name="new2")
    response = client.get(f"/{key}.txt", HTTP_HOST="new2.tenants.test")
    assert (response.status_code, response.content) == (200, key.encode())


# --------------------------------------------------------------------------- real processes


@pytest.fixture
def web_process(tmp_path: Any) -> Iterator[str]:
    """A running ``manage.py runserver`` of the test project with ``HOSTS`` from the tenants."""
    port = services.free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "INDEXNOW_TEST_OVERRIDES": json.dumps({"HOSTS": TENANTS, "DISPATCH": "queue"}),
    }
    log = (tmp_path / "web.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "django", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=services.ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"{base}/", timeout=1)
                break
            except requests.ConnectionError:
                assert process.poll() is None, "runserver exited"
                assert time.monotonic() < deadline, "runserver did not start"
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(10)
        log.close()


def key_file_status(base: str, domain: str) -> tuple[int, str]:
    response = requests.get(f"{base}/{tenant_key(domain)}.txt", headers={"Host": domain}, timeout=5)
    return response.status_code, response.text


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_tenant_created_at_run_time_is_served_and_delivered_without_a_restart(
    indexnow_settings: Any, start_worker: Any, web_process: str, engine: Any, redis_conn: Any
) -> None:
    from tests.testapp.models import Page

    overrides = {"HOSTS": TENANTS, "DISPATCH": "queue"}
    indexnow_settings(**overrides)
    start_worker(overrides)
    domain = "new3.tenants.test"
    assert key_file_status(web_process, domain)[0] == 404  # read by the running web process
    deliver_now(["https://www.example.com/warm/"])  # and the worker has read its hosts too
    engine.wait_for_posts(1)

    Site.objects.create(domain=domain, name="new3")
    # A process reads its hosts again for a host it does not know at most once per
    # HOSTS_REREAD_SECONDS after its last read, and this one and the worker have just read
    # theirs. The worker's clock runs in its own process: no event says it has run out.
    time.sleep(live_hosts.HOSTS_REREAD_SECONDS)
    with batch():  # flushed at its end: one job for the worker
        Page.objects.create(path=f"https://{domain}/p/new-0/")

    [_, post] = engine.wait_for_posts(2, timeout=20)
    assert (post.json["host"], post.json["key"], post.urls) == (
        domain,
        tenant_key(domain),
        [f"https://{domain}/p/new-0/"],
    )
    assert key_file_status(web_process, domain) == (200, tenant_key(domain))


# --------------------------------------------------------------------------- hosts that cannot be public


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("localhost", "a name only a private network resolves"),
        ("localhost:8000", "a name only a private network resolves"),
        ("shop.localhost", "a name only a private network resolves"),
        ("printer.local", "a name only a private network resolves"),
        ("wiki.corp.internal", "a name only a private network resolves"),
        ("nas.lan", "a name only a private network resolves"),
        ("router.home.arpa", "a name only a private network resolves"),
        ("intranet", "a name with no dot"),
        ("127.0.0.1:8000", "a loopback address"),
        ("[::1]:8000", "a loopback address"),
        ("10.1.2.3", "a private address"),
        ("192.168.1.20", "a private address"),
        ("169.254.10.1", "a link-local address"),
        ("[fe80::1]", "a link-local address"),
        ("example.com", "the placeholder domain of a fresh django.contrib.sites Site"),
        ("www.example.com", None),
        ("example.org", None),
        ("shop.example.net:8443", None),
        ("93.184.215.14", None),
    ],
)
def test_which_hosts_cannot_be_public(host: str, why: str | None) -> None:
    from indexnow_django.protocol.normalize import not_public_reason

    assert not_public_reason(host) == why


def check_output() -> tuple[str, str]:
    """``indexnow_check --offline``'s output and the reason it failed ("" when it passed)."""
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    out = StringIO()
    try:
        call_command("indexnow_check", "--offline", stdout=out, no_color=True)
    except CommandError as exc:
        return out.getvalue(), str(exc)
    return out.getvalue(), ""


@pytest.mark.indexnow(**AT_ONCE)
@pytest.mark.django_db
class TestHostsThatCannotBePublic:
    """Their URLs are dropped, named with why and where the host came from."""

    def test_a_base_url_on_localhost_is_never_sent_and_fails_the_check(
        self, engine: Any, indexnow_settings: Any, caplog: pytest.LogCaptureFixture
    ) -> None:
        indexnow_settings(BASE_URL="http://localhost:8000")
        caplog.set_level(logging.WARNING, logger="indexnow_django")

        report = deliver_now(["/a/", "http://localhost:8000/b/"])

        assert engine.posts == []
        assert report.dropped == [
            (
                url,
                "host 'localhost:8000' cannot be public (a name only a private network resolves, "
                "from BASE_URL): never sent to an engine",
            )
            for url in ("http://localhost:8000/a/", "http://localhost:8000/b/")
        ]
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert (
            "IndexNow will not submit URLs on host 'localhost:8000': it cannot be public (a name "
            "only a private network resolves, from BASE_URL). Give the site's public host there "
            "(see manage.py indexnow_check)." in warnings
        )
        output, failure = check_output()
        assert failure
        assert (
            "FAIL  localhost:8000: cannot be public (a name only a private network resolves, from "
            "BASE_URL): its URLs are never sent to an engine" in output
        )

    def test_the_placeholder_domain_of_a_fresh_sites_site_is_dropped_and_named(
        self, engine: Any, indexnow_settings: Any, caplog: pytest.LogCaptureFixture
    ) -> None:
        """No BASE_URL: the domain comes from django.contrib.sites, still example.com."""
        Site.objects.filter(pk=1).update(domain="example.com")
        Site.objects.clear_cache()
        indexnow_settings(BASE_URL=None)
        caplog.set_level(logging.WARNING, logger="indexnow_django")

        report = deliver_now(["/a/"])

        assert engine.posts == []
        [(url, reason)] = report.dropped
        assert url == "https://example.com/a/"
        assert reason == (
            "host 'example.com' cannot be public (the placeholder domain of a fresh "
            "django.contrib.sites Site, from the django.contrib.sites domain): never sent to an engine"
        )
        assert any("'example.com'" in r.getMessage() for r in caplog.records)
        output, failure = check_output()
        assert failure and "FAIL  example.com: cannot be public" in output

    def test_hosts_that_cannot_be_public_are_left_out_of_hosts_and_the_others_still_go(
        self, engine: Any, indexnow_settings: Any
    ) -> None:
        indexnow_settings(HOSTS=["www.example.com", "intranet", "10.0.0.7"])

        report = deliver_now(["/a/", "https://intranet/b/", "https://10.0.0.7/c/"])

        assert [post.urls for post in engine.posts] == [["https://www.example.com/a/"]]
        assert [reason for _, reason in report.dropped] == [
            "host 'intranet' cannot be public (a name with no dot, from HOSTS): never sent to an "
            "engine",
            "host '10.0.0.7' cannot be public (a private address, from HOSTS): never sent to an engine",
        ]
        assert list(get_settings().hosts) == ["www.example.com"]

    def test_a_dry_run_logs_them_as_it_logs_everything(
        self, engine: Any, indexnow_settings: Any, caplog: pytest.LogCaptureFixture
    ) -> None:
        indexnow_settings(BASE_URL="http://127.0.0.1:8000", DRY_RUN=True)
        caplog.set_level(logging.INFO, logger="indexnow_django")

        deliver_now(["/a/"])

        assert engine.posts == []
        assert any(
            "would POST" in r.getMessage() and "http://127.0.0.1:8000/a/" in r.getMessage()
            for r in caplog.records
        )
        output, failure = check_output()
        assert failure and "FAIL  127.0.0.1:8000: cannot be public (a loopback address" in output

    def test_allow_private_hosts_sends_them_for_a_site_whose_engine_is_on_its_network(
        self, engine: Any, indexnow_settings: Any
    ) -> None:
        indexnow_settings(BASE_URL="http://wiki.corp.internal", ALLOW_PRIVATE_HOSTS=True)

        deliver_now(["/a/"])

        assert [post.urls for post in engine.posts] == [["http://wiki.corp.internal/a/"]]
        output, _ = check_output()
        assert "cannot be public" not in output


def hosts_with_a_key_read_from_a_file() -> dict[str, dict[str, str]]:
    """A tenant whose key came from a file with its final line break (``HOSTS``)."""
    return {"www.example.com": {}, "acme.example.org": {"KEY": "acme-key-0123456789\n"}}


@pytest.mark.indexnow(**AT_ONCE)
@pytest.mark.django_db
def test_a_key_with_a_line_break_from_the_hosts_function_is_never_sent(
    engine: Any, indexnow_settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Keys read at run time are checked as the settings are: the host is skipped, with an
    ERROR line naming its key masked."""
    indexnow_settings(HOSTS=f"{__name__}.hosts_with_a_key_read_from_a_file")
    caplog.set_level(logging.ERROR, logger="indexnow_django")

    report = deliver_now(["https://acme.example.org/a/", "/b/"])

    assert [(post.json["host"], post.json["key"]) for post in engine.posts] == [
        ("www.example.com", "test-key-0123456789")
    ]
    assert [url for url, _ in report.dropped] == ["https://acme.example.org/a/"]
    [error] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert "INDEXNOW['HOSTS']['acme.example.org']['KEY'] acme… must be" in error
    assert "it ends with a line break" in error
    assert "acme-key-0123456789" not in error
