"""A small Wagtail site for the Wagtail integration's tests (its own settings module).

These tests run in their own pytest process, with
``--ds tests.wagtail_site.settings``: the main suite starts it and shows each of
its tests (``tests/sitesuite.py``), and ``nox -s wagtail`` runs it on each
supported Wagtail release.
"""
