"""The settings object's hosts (``conf.py``): from ``HOSTS`` as a dotted path to a callable and
from apps' ``indexnow_hosts()``, read again within seconds by every process."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from django.apps import apps
from django.contrib.sites.models import Site

from indexnow_django import batch, conf
from indexnow_django.conf import get_settings
from indexnow_django.delivery.send import deliver_now
from tests import services
from tests.testapp.tenants import tenant_key

TENANTS = "tests.testapp.tenants.hosts"


@pytest.fixture
def quick_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conf, "HOSTS_REFRESH_SECONDS", 0.3)
    monkeypatch.setattr(conf, "HOSTS_REREAD_SECONDS", 0.0)


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
    indexnow_settings: Any, monkeypatch: pytest.MonkeyPatch, django_assert_num_queries: Any
) -> None:
    monkeypatch.setattr(conf, "HOSTS_REFRESH_SECONDS", 0.5)
    indexnow_settings(HOSTS=TENANTS)
    get_settings().hosts  # noqa: B018
    Site.objects.create(domain="later.tenants.test", name="later")
    with django_assert_num_queries(0):
        for _ in range(100):
            assert "later.tenants.test" not in get_settings().hosts
    time.sleep(0.6)
    assert get_settings().host_config("later.tenants.test").key == tenant_key("later.tenants.test")


def test_an_app_configs_hook_is_read_again(
    monkeypatch: pytest.MonkeyPatch, quick_refresh: None
) -> None:
    tenants = ["one.hooked.test"]
    monkeypatch.setattr(
        apps.get_app_config("testapp"), "indexnow_hosts", lambda: tenants, raising=False
    )
    assert "one.hooked.test" in get_settings().hosts
    tenants.append("two.hooked.test")
    time.sleep(0.4)
    assert get_settings().host_config("two.hooked.test").key == get_settings().key


def test_a_failing_read_keeps_the_hosts_read_before(
    monkeypatch: pytest.MonkeyPatch, quick_refresh: None, caplog: pytest.LogCaptureFixture
) -> None:
    answers: list[Any] = [["ok.hooked.test"]]

    def hook() -> list[str]:
        if isinstance(answers[-1], Exception):
            raise answers[-1]
        return list(answers[-1])

    monkeypatch.setattr(apps.get_app_config("testapp"), "indexnow_hosts", hook, raising=False)
    assert "ok.hooked.test" in get_settings().hosts
    answers.append(ConnectionError("the tenants' database is away"))
    time.sleep(0.4)
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
    time.sleep(1)
    with batch():  # flushed at its end: one job for the worker
        Page.objects.create(path=f"https://{domain}/p/new-0/")

    [_, post] = engine.wait_for_posts(2, timeout=20)
    assert (post.json["host"], post.json["key"], post.urls) == (
        domain,
        tenant_key(domain),
        [f"https://{domain}/p/new-0/"],
    )
    assert key_file_status(web_process, domain) == (200, tenant_key(domain))
