"""The key file view: ``GET``/``HEAD /<KEY>.txt``."""

from __future__ import annotations

import logging

from django.http import Http404, HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_safe

from .conf import get_settings
from .exceptions import IndexNowConfigError
from .protocol.normalize import normalize_host

logger = logging.getLogger(__name__)

__all__ = ["KEY_FILE_MAX_AGE", "key_file"]


#: ``Cache-Control`` max-age of a key file, in seconds: a day. What ``/<KEY>.txt`` holds
#: never changes (its name is the key), it can only go away when the key is retired,
#: and a copy kept by a proxy or CDN after that is harmless; a day spares the site the
#: fetches of every engine checking every submission, and lets a retired key's file
#: leave the caches within the day.
KEY_FILE_MAX_AGE = 24 * 3600


@require_safe
def key_file(request: HttpRequest, key: str) -> HttpResponse:
    """Answer with exactly the key of the host the request came in on, as text/plain.

    With per-host keys (``HOSTS`` as a dict) the host's own key is served; on
    a host that is not configured (a development server, say) the main
    ``KEY``. The files of ``PREVIOUS_KEYS`` (the host's, or the main ones) are
    served too. The URL pattern takes only names of served keys
    (:class:`indexnow_django.urls.KeyFileName`); a key of another host is a 404 here.
    The answer may be cached for
    :data:`KEY_FILE_MAX_AGE`; with per-host keys it varies with ``Host``.
    """
    try:
        conf = get_settings()
    except IndexNowConfigError:
        logger.warning(
            "IndexNow key file requested but settings.INDEXNOW is invalid; answering 404"
        )
        raise Http404("No key file") from None
    try:
        host = normalize_host(request.get_host())
    except Exception:  # DisallowedHost, a malformed Host header: serve the main key
        host_conf = None
    else:
        host_conf = conf.host_config(host)
        if host_conf is None and conf.reread_hosts():  # a tenant added since the last read
            host_conf = conf.host_config(host)
    if host_conf is not None:
        served = host_conf.serves(key)
    else:
        served = key == conf.key or key in conf.previous_keys
    if not served:
        raise Http404("No such key file")
    response = HttpResponse(key, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = f"public, max-age={KEY_FILE_MAX_AGE}"
    if conf.keys_per_host:
        patch_vary_headers(response, ["Host"])
    return response
