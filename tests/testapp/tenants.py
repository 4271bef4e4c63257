"""Hosts from the database, as a multi-tenant site has them: ``INDEXNOW["HOSTS"]`` names
:func:`hosts`. The tenants are ``django.contrib.sites`` records on ``*.tenants.test``."""

from __future__ import annotations

from typing import Any

#: The main site, always there.
MAIN = "www.example.com"
SUFFIX = ".tenants.test"


def tenant_key(domain: str) -> str:
    """Each tenant's own key (8-128 characters of A-Z a-z 0-9 -)."""
    return "tenant-" + domain.split(".")[0] + "-0123456789"


def hosts() -> dict[str, dict[str, Any]]:
    from django.contrib.sites.models import Site

    domains = Site.objects.filter(domain__endswith=SUFFIX).values_list("domain", flat=True)
    return {MAIN: {}, **{domain: {"KEY": tenant_key(domain)} for domain in domains}}


NOT_CALLABLE = "a string"
