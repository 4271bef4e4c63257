"""Include with ``path("", include("indexnow_django.urls"))`` to serve the key file.

The pattern takes only the names of the keys this site serves (see
:class:`KeyFileName`): any other ``*.txt`` (``/robots.txt``, ``/ads.txt``) falls
through to the site's next pattern, wherever the include stands.
"""

from __future__ import annotations

from django.urls import path, register_converter
from django.urls.converters import get_converters

from .conf import get_settings
from .conf.rules import KEY_RE
from .exceptions import IndexNowConfigError
from .views import key_file

app_name = "indexnow"

__all__ = ["KeyFileName", "app_name", "urlpatterns"]


class KeyFileName:
    """The name of a key file this site serves: the main key, ``PREVIOUS_KEYS``, and each
    host's (those read from code too). Decided when a path is resolved, by a set look-up
    (the hosts are those the settings keep; see :mod:`indexnow_django.conf.hosts`);
    any other name does not match, so Django tries the next pattern."""

    regex = KEY_RE.pattern

    def to_python(self, value: str) -> str:
        try:
            if get_settings(resolve_hosts=False).serves_key(value):
                return value
        except IndexNowConfigError:
            pass
        raise ValueError(value)

    def to_url(self, value: str) -> str:
        return value


if "indexnow_key" not in get_converters():
    register_converter(KeyFileName, "indexnow_key")

urlpatterns = [
    path("<indexnow_key:key>.txt", key_file, name="key-file"),
]
