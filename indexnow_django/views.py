"""The key file view: ``GET``/``HEAD /<KEY>.txt``."""

from __future__ import annotations

import logging

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from .conf import get_settings
from .exceptions import IndexNowConfigError
from .normalize import normalize_host

logger = logging.getLogger(__name__)

__all__ = ["key_file"]


@require_safe
def key_file(request: HttpRequest, key: str) -> HttpResponse:
    """Answer with exactly the key of the host the request came in on, as text/plain.

    With per-host keys (``HOSTS`` as a dict) the host's own key is served; on
    a host that is not configured (a development server, say) the main
    ``KEY``. Any other file name is a 404.
    """
    try:
        conf = get_settings()
    except IndexNowConfigError:
        logger.warning(
            "IndexNow key file requested but settings.INDEXNOW is invalid; answering 404"
        )
        raise Http404("No key file") from None
    expected = conf.key
    try:
        host = normalize_host(request.get_host())
    except Exception:  # DisallowedHost, a malformed Host header: serve the main key
        host_conf = None
    else:
        host_conf = conf.host_config(host)
        if host_conf is None and conf.reread_hosts():  # a tenant added since the last read
            host_conf = conf.host_config(host)
    if host_conf is not None:
        expected = host_conf.key
    if key != expected:
        raise Http404("No such key file")
    response = HttpResponse(expected, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "public, max-age=3600"
    return response
