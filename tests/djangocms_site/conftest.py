"""The django CMS tests: fixtures under their own settings, items of the main run under its.

They need django CMS's apps in ``INSTALLED_APPS`` (``tests.djangocms_site.settings``),
which the rest of the suite runs without: the main run (``tests.settings``) hands
this folder's test modules to ``tests/sitesuite.py``, which runs them with
``--ds tests.djangocms_site.settings`` in a pytest process of their own and shows
each as a test of its own. ``python -m pytest tests/djangocms_site --ds
tests.djangocms_site.settings`` runs them alone.
"""

from __future__ import annotations

import os

SETTINGS = "tests.djangocms_site.settings"

if os.environ.get("DJANGO_SETTINGS_MODULE") != SETTINGS:
    from tests.sitesuite import suite

    # A missing django CMS is an error, not a skip: the test extra installs it.
    pytest_pycollect_makemodule = suite(__file__).pytest_pycollect_makemodule
else:
    from tests.djangocms_site.fixtures import *  # noqa: F403
