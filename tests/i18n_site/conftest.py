"""The multilingual site's tests: fixtures under their own settings, items of the main
run under its.

They need django-modeltranslation, ``LocaleMiddleware`` and ``i18n_patterns``
(``tests.i18n_site.settings``), which the rest of the suite runs without: the main
run (``tests.settings``) hands this folder's test modules to ``tests/sitesuite.py``,
which runs them with ``--ds tests.i18n_site.settings`` in a pytest process of their
own and shows each as a test of its own. ``python -m pytest tests/i18n_site --ds
tests.i18n_site.settings`` runs them alone.
"""

from __future__ import annotations

import os

SETTINGS = "tests.i18n_site.settings"

if os.environ.get("DJANGO_SETTINGS_MODULE") != SETTINGS:
    from tests.sitesuite import suite

    pytest_pycollect_makemodule = suite(__file__).pytest_pycollect_makemodule
else:
    from tests.i18n_site.fixtures import *  # noqa: F403
