"""The test sites' tests as tests of the main run, each run under its site's settings.

A site (``tests/wagtail_site``, ``tests/djangocms_site``, ``tests/i18n_site``)
needs apps in ``INSTALLED_APPS`` that the rest of the suite runs without, so its
tests run in a pytest process of their own: ``python -m pytest tests/wagtail_site
--ds tests.wagtail_site.settings`` runs them alone. In the main run, the site's
conftest hands its test modules to :class:`SiteSuite`, and each of its tests is
an item of the main run with the node id it has in the site's run
(``tests/wagtail_site/test_publishing.py::test_...``): ``-k`` and node ids select
them, and each passes or fails on its own, with the site run's failure text.

- Collection: the site's tests are collected once per run, by ``--collect-only``
  in a process of its own (``tests/sitereport.py`` writes what it found); the
  xdist workers read what the first of them wrote in the run's folder.
- Running: once the run knows which tests it selected (the xdist controller when
  a worker has collected, the pytest process itself with ``-n0``), it starts each
  site's pytest process on that site's selected tests, in the background, beside
  the rest of the suite, whose tests run first. An item waits for its site's
  report and passes or fails with what it says; whichever worker runs it.
- The site's process has its own redis-server, loopback engine and database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from tests import services
from tests.sitereport import REPORT

#: The sites: folder (from the repository's root), settings, the distributions they test.
SITES = {
    "tests/wagtail_site": ("tests.wagtail_site.settings", ("wagtail",)),
    "tests/djangocms_site": (
        "tests.djangocms_site.settings",
        ("django-cms", "djangocms-versioning"),
    ),
    "tests/i18n_site": (
        "tests.i18n_site.settings",
        ("django-modeltranslation", "django-parler"),
    ),
}

#: What a site's process does not inherit: it starts services of its own, and runs as a
#: plain pytest process (not one of xdist's workers).
NOT_INHERITED = (
    "REDIS_URL",
    "INDEXNOW_TEST_ENGINE_URL",
    "INDEXNOW_TEST_DB",
    "INDEXNOW_TEST_PG_NAME",
    services.STARTED,
    services.RUN_DIR,
    "DJANGO_SETTINGS_MODULE",
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
    "PYTEST_ADDOPTS",
)

#: Marks of a site's tests that the main run's lanes select on.
KEPT_MARKS = ("worker", "slow")

#: How long a site's run may take (its tests are seconds each: this is for a hang).
TIMEOUT = 900


class SiteTestFailed(Exception):
    """A test of a site that did not pass in the site's run: its failure text."""


class SiteSuite:
    """One test site: its folder, settings and distributions, and its run's files."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.settings, self.distributions = SITES[folder]
        self.name = Path(folder).name
        self._collected: list[dict[str, Any]] | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def pytest_pycollect_makemodule(
        self, module_path: Path, parent: pytest.Collector
    ) -> pytest.Collector:
        """The site conftest's hook: its test modules, as :class:`SiteModule`."""
        return SiteModule.from_parent(parent, path=module_path, suite=self)

    def versions(self) -> str:
        return ", ".join(f"{name} {version(name)}" for name in self.distributions)

    def _file(self, kind: str) -> Path:
        return services.run_dir() / f"{self.name}.{kind}"

    def _command(self, *args: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "pytest",
            *args,
            "--ds",
            self.settings,
            "-n0",
            "-p",
            "no:cacheprovider",
            "-q",
        ]

    def _env(self, report: Path) -> dict[str, str]:
        env = {name: value for name, value in os.environ.items() if name not in NOT_INHERITED}
        return {**env, REPORT: str(report)}

    # Collecting --------------------------------------------------------------------------

    def collected(self) -> list[dict[str, Any]]:
        """The site's tests, in its run's order: collected once per run."""
        if self._collected is None:
            shared = self._file("collected.json")
            with services.run_lock(self.name):
                if not shared.exists():
                    self._collect(shared)
            self._collected = json.loads(shared.read_text())
        return self._collected

    def _collect(self, shared: Path) -> None:
        with tempfile.TemporaryDirectory(prefix=f"indexnow-{self.name}-") as folder:
            report = Path(folder) / "report.json"
            result = subprocess.run(
                self._command(self.folder, "--collect-only"),
                cwd=services.ROOT,
                env=self._env(report),
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
            found = json.loads(report.read_text())["collected"] if report.exists() else []
        if not found:
            raise SiteTestFailed(
                f"The {self.name} tests could not be collected under {self.settings} "
                f"({self.versions()}):\n{(result.stdout + result.stderr)[-20000:]}"
            )
        shared.write_text(json.dumps(found))

    # Running -----------------------------------------------------------------------------

    def start(self, nodeids: Sequence[str]) -> None:
        """Run ``nodeids`` in the site's process, in the background; :meth:`outcome` reads
        what it reports. The process stops with this one."""
        output = self._file("out").open("wb")
        self._process = subprocess.Popen(
            self._command(*nodeids),
            cwd=services.ROOT,
            env=self._env(self._file("report.json")),
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=services.die_with_parent,
        )
        threading.Thread(target=self._wait, args=(self._process, output), daemon=True).start()

    def _wait(self, process: subprocess.Popen[bytes], output: Any) -> None:
        try:
            returncode = process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            returncode = process.wait()
        output.close()
        self._file("done").write_text(str(returncode))

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def outcome(self, nodeid: str) -> None:
        """Pass, or raise :class:`SiteTestFailed` with what the site's run said."""
        done = self._file("done")
        deadline = time.monotonic() + TIMEOUT + 60
        while not done.exists():
            if time.monotonic() > deadline:
                raise SiteTestFailed(f"The {self.name} run did not finish.")
            time.sleep(0.2)
        report = self._file("report.json")
        results = json.loads(report.read_text())["results"] if report.exists() else {}
        result = results.get(nodeid)
        if result is None:
            output = self._file("out").read_text(errors="replace")
            raise SiteTestFailed(
                f"{nodeid} did not run in the {self.name} run ({self.versions()}), "
                f"which exited with {done.read_text()}:\n{output[-20000:]}"
            )
        if result["outcome"] != "passed":
            # A skip there is a failure here: the test extra installs what the sites need.
            raise SiteTestFailed(
                f"{result['outcome']} in the {self.name} run ({self.versions()}):\n{result['text']}"
            )


_suites: dict[str, SiteSuite] = {}


def suite(conftest: str) -> SiteSuite:
    """The suite of the site whose ``conftest.py`` is ``conftest`` (one per process)."""
    folder = Path(conftest).resolve().parent.relative_to(services.ROOT).as_posix()
    return _suites.setdefault(folder, SiteSuite(folder))


class SiteModule(pytest.File):
    """A test module of a site: one :class:`SiteItem` per test its run collects there."""

    def __init__(self, *, suite: SiteSuite, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite

    def collect(self) -> Iterator[SiteItem]:
        prefix = f"{self.nodeid}::"
        try:
            collected = self.suite.collected()
        except SiteTestFailed as error:
            raise self.CollectError(str(error)) from None
        for test in collected:
            if test["nodeid"].startswith(prefix):
                item = SiteItem.from_parent(
                    self, name=test["nodeid"][len(prefix) :], suite=self.suite, line=test["line"]
                )
                for mark in ("slow", *(m for m in test["marks"] if m in KEPT_MARKS)):
                    item.add_marker(mark)
                # The first test of a site to run waits for the whole site's run.
                item.add_marker(pytest.mark.timeout(TIMEOUT + 120))
                yield item


class SiteItem(pytest.Item):
    """A test of a site: its outcome in the site's run (:meth:`SiteSuite.outcome`)."""

    def __init__(self, *, suite: SiteSuite, line: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.line = line

    def runtest(self) -> None:
        self.suite.outcome(self.nodeid)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, SiteTestFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, self.line, self.name


class SiteRuns:
    """The plugin that starts the sites' runs, once per run, on the selected tests
    (registered by ``tests/plugin.py``)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started: list[SiteSuite] = []

    def start(self, nodeids: Sequence[str]) -> None:
        if self.started or self.config.option.collectonly:
            return
        for folder, (settings, _) in SITES.items():
            if settings == os.environ.get("DJANGO_SETTINGS_MODULE"):
                continue  # this is the site's own run
            selected = [nodeid for nodeid in nodeids if nodeid.startswith(f"{folder}/")]
            if selected:
                site = SiteSuite(folder)
                site.start(selected)
                self.started.append(site)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """The sites' tests last (in every xdist worker alike): their runs, started as the
        run begins, have the rest of the suite's time to finish beside it."""
        items.sort(key=lambda item: isinstance(item, SiteItem))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """One process (``-n0``): it starts them itself. An xdist worker does not."""
        if not os.environ.get("PYTEST_XDIST_WORKER"):
            self.start([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        """The xdist controller: when the first worker has collected (they all collect
        the same tests)."""
        self.start(ids)

    def pytest_unconfigure(self) -> None:
        for site in self.started:
            site.stop()
