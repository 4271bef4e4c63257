"""The django CMS integration's tests, run on real django CMS in their own pytest process.

They need django CMS's apps in ``INSTALLED_APPS`` (``tests.djangocms_site.settings``),
which the rest of the suite runs without, so this test starts
``python -m pytest tests/djangocms_site --ds tests.djangocms_site.settings`` with
its own loopback engine and database (and this suite's Redis), and fails with that run's
output when any of its tests fails, errors or is skipped.
"""

from __future__ import annotations

import re
from importlib.metadata import version

import pytest

from tests.services import run_site_suite


@pytest.mark.slow
def test_djangocms_integration_on_real_django_cms() -> None:
    # The test extra installs them; a missing django CMS is an error, not a skip.
    import cms  # noqa: F401
    import djangocms_versioning  # noqa: F401

    result, summary = run_site_suite("tests/djangocms_site", "tests.djangocms_site.settings")
    output = result.stdout + result.stderr
    versions = f"django CMS {version('django-cms')}, djangocms-versioning {version('djangocms-versioning')}"
    assert result.returncode == 0, f"{versions}:\n{output[-20000:]}"
    assert re.search(r"\d+ passed", summary), output[-5000:]
    assert not re.search(r"skipped|xfail|deselected|error", summary), summary
