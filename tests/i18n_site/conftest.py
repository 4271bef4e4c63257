"""Fixtures of the multilingual site's tests; collected only under its own settings.

The main suite (``tests.settings``) skips this folder: ``tests/test_languages.py``
runs it in a separate pytest process with ``--ds tests.i18n_site.settings``.
"""

from __future__ import annotations

import os

SETTINGS = "tests.i18n_site.settings"

if os.environ.get("DJANGO_SETTINGS_MODULE") != SETTINGS:
    collect_ignore_glob = ["*"]
else:
    from tests.i18n_site.fixtures import *  # noqa: F403
