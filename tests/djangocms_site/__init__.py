"""A small django CMS site for the django CMS integration's tests (its own settings module).

These tests run in their own pytest process, with
``--ds tests.djangocms_site.settings``: the main suite starts it and shows each
of its tests (``tests/sitesuite.py``), and ``nox -s djangocms`` runs it on its own.
"""
