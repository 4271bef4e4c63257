"""The test process's services: started before pytest-django reads ``tests.settings``.

Loaded with ``-p tests.plugin`` (``addopts`` in ``pyproject.toml``): a plugin
named there is imported before any conftest, and its wrapper of
``pytest_load_initial_conftests`` runs before pytest-django's, which imports
the settings. The settings read the addresses that :func:`tests.services.start`
exports; the services stop when the process's session ends.

The suite runs on pytest-xdist's workers (``-n`` in ``addopts``). Each worker
is a pytest process of its own that runs these hooks too: it drops the
addresses its controller started (it inherited them) and starts its own
redis-server, loopback engine and database, so that no two workers share one.
The controller's, started before it knows it will hand the tests out, stay idle.
Without xdist (``-p no:xdist``, or not installed) the ``-n`` and ``--dist`` of
``addopts`` are accepted and the suite runs in one process.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

from tests import services, sitereport
from tests.sitesuite import SiteRuns


def xdist_worker() -> str | None:
    """``"gw0"``, ``"gw1"``... in an xdist worker process, ``None`` elsewhere."""
    return os.environ.get("PYTEST_XDIST_WORKER")


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> Generator[None]:
    if not early_config.pluginmanager.has_plugin("xdist"):
        group = parser.getgroup("xdist", "(pytest-xdist is off: the suite runs in one process)")
        # _addoption: lowercase short options are pytest's own, and xdist's by the same door.
        group._addoption("-n", "--numprocesses", dest="numprocesses", default=0, help="ignored")
        group.addoption("--dist", dest="dist", default="no", help="ignored")
    if xdist_worker():
        services.forget_inherited()
    services.start()
    yield


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SiteRuns(config), "indexnow-site-runs")
    if os.environ.get(sitereport.REPORT):  # a test site's run, for the main run
        config.pluginmanager.register(sitereport, "indexnow-site-report")
    started = os.environ.get(services.STARTED, "").split(",")
    workers = getattr(config.option, "numprocesses", None) or 0
    if workers and not xdist_worker() and "REDIS_URL" not in started:
        raise pytest.UsageError(
            "REDIS_URL points the suite at one Redis, which it flushes: parallel workers "
            "would flush each other's queues. Run it in one process (-n0), or unset "
            "REDIS_URL so that each worker starts a redis-server of its own."
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    services.stop()
