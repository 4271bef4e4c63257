"""A small django CMS site for the django CMS integration's tests (its own settings module).

These tests run in their own pytest process, with
``--ds tests.djangocms_site.settings``: ``tests/test_contrib_djangocms.py``
starts it from the main suite, and ``nox -s djangocms`` runs it on its own.
"""
