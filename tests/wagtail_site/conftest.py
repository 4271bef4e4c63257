"""The Wagtail tests: fixtures under their own settings, items of the main run under its.

They need Wagtail's apps in ``INSTALLED_APPS`` (``tests.wagtail_site.settings``),
which the rest of the suite runs without: the main run (``tests.settings``) hands
this folder's test modules to ``tests/sitesuite.py``, which runs them with
``--ds tests.wagtail_site.settings`` in a pytest process of their own and shows
each as a test of its own. ``python -m pytest tests/wagtail_site --ds
tests.wagtail_site.settings`` runs them alone.
"""

from __future__ import annotations

import os

SETTINGS = "tests.wagtail_site.settings"

if os.environ.get("DJANGO_SETTINGS_MODULE") != SETTINGS:
    from tests.sitesuite import suite

    # A missing Wagtail is an error, not a skip: the test extra installs it.
    pytest_pycollect_makemodule = suite(__file__).pytest_pycollect_makemodule
else:
    from tests.wagtail_site.fixtures import *  # noqa: F403
