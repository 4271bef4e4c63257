"""The Wagtail integration's tests, run on real Wagtail in their own pytest process.

They need Wagtail's apps in ``INSTALLED_APPS`` (``tests.wagtail_site.settings``),
which the rest of the suite runs without, so this test starts
``python -m pytest tests/wagtail_site --ds tests.wagtail_site.settings`` with
its own loopback engine and database (and this suite's Redis), and fails with that run's
output when any of its tests fails, errors or is skipped.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wagtail_integration_on_real_wagtail() -> None:
    import wagtail  # the test extra installs it; a missing Wagtail is an error, not a skip

    env = {
        name: value
        for name, value in os.environ.items()
        # Its own engine (to read what it received) and database; the same Redis,
        # which nothing else uses while this test waits.
        if name not in ("INDEXNOW_TEST_ENGINE_URL", "INDEXNOW_TEST_DB", "DJANGO_SETTINGS_MODULE")
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/wagtail_site",
            "--ds",
            "tests.wagtail_site.settings",
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = result.stdout + result.stderr
    summary = output.strip().splitlines()[-1] if output.strip() else ""
    assert result.returncode == 0, f"Wagtail {wagtail.__version__}:\n{output[-20000:]}"
    assert re.search(r"\d+ passed", summary), output[-5000:]
    assert not re.search(r"skipped|xfail|deselected|error", summary), summary
