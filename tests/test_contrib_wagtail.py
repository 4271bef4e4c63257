"""The Wagtail integration's tests, run on real Wagtail in their own pytest process.

They need Wagtail's apps in ``INSTALLED_APPS`` (``tests.wagtail_site.settings``),
which the rest of the suite runs without, so this test starts
``python -m pytest tests/wagtail_site --ds tests.wagtail_site.settings`` with
its own loopback engine and database (and this suite's Redis), and fails with that run's
output when any of its tests fails, errors or is skipped.
"""

from __future__ import annotations

import re

import pytest

from tests.services import run_site_suite


@pytest.mark.slow
def test_wagtail_integration_on_real_wagtail() -> None:
    import wagtail  # the test extra installs it; a missing Wagtail is an error, not a skip

    result, summary = run_site_suite("tests/wagtail_site", "tests.wagtail_site.settings")
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"Wagtail {wagtail.__version__}:\n{output[-20000:]}"
    assert re.search(r"\d+ passed", summary), output[-5000:]
    assert not re.search(r"skipped|xfail|deselected|error", summary), summary
