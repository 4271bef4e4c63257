"""django CMS integration: add ``"indexnow_django.contrib.djangocms"`` to ``INSTALLED_APPS``.

Every page is tracked, in each language, through djangocms-versioning's own
publishing operations and django CMS's page operations, with no registration
code (see :mod:`.handlers`); a page's URL in a language is its live path on
its ``Site``'s domain (see :mod:`.pages`), and the sites' domains are allowed
hosts (see :mod:`.apps`).
"""
