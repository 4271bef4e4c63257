"""Fixtures of the Wagtail tests; they are collected only under their own settings.

The main suite (``tests.settings``, no Wagtail in ``INSTALLED_APPS``) skips
collecting this folder: ``tests/test_contrib_wagtail.py`` runs it in a
separate pytest process with ``--ds tests.wagtail_site.settings``.
"""

from __future__ import annotations

import os

SETTINGS = "tests.wagtail_site.settings"

if os.environ.get("DJANGO_SETTINGS_MODULE") != SETTINGS:
    collect_ignore_glob = ["*"]
else:
    from tests.wagtail_site.fixtures import *  # noqa: F403
