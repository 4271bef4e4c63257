"""Wagtail integration: add ``"indexnow_django.contrib.wagtail"`` to ``INSTALLED_APPS``.

Every page type is tracked through Wagtail's own publishing events, with no
registration code (see :mod:`.handlers`); a page's URLs are its full URLs on
every Wagtail ``Site`` it is routable on (see :mod:`.pages`), and the sites'
hosts are allowed hosts (see :mod:`.apps`).
"""
