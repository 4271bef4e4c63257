"""Fixtures of the django CMS tests; they are collected only under their own settings.

The main suite (``tests.settings``, no django CMS in ``INSTALLED_APPS``) skips
collecting this folder: ``tests/test_contrib_djangocms.py`` runs it in a
separate pytest process with ``--ds tests.djangocms_site.settings``.
"""

from __future__ import annotations

import os

SETTINGS = "tests.djangocms_site.settings"

if os.environ.get("DJANGO_SETTINGS_MODULE") != SETTINGS:
    collect_ignore_glob = ["*"]
else:
    from tests.djangocms_site.fixtures import *  # noqa: F403
