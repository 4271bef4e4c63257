"""A small Wagtail site for the Wagtail integration's tests (its own settings module).

These tests run in their own pytest process, with
``--ds tests.wagtail_site.settings``: ``tests/test_contrib_wagtail.py`` starts
it from the main suite, and ``nox -s wagtail`` runs it on each supported
Wagtail release.
"""
