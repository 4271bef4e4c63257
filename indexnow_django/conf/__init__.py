"""``settings.INDEXNOW``, read when used (never at import time, so ``override_settings``
always works):

- :mod:`.declared`: every key once, with its default, kind, bounds, check id and hint;
  :data:`DEFAULTS` and the settings object's attributes are made from them;
- :mod:`.rules`: :func:`validate`, the one place that knows what is valid (the system
  checks report its problems, :func:`get_settings` raises on them), and the rules that
  need code;
- :mod:`.hosts`: the hosts, read again within seconds when they come from code;
- :mod:`.settings`: :class:`IndexNowSettings`, :func:`get_settings` and its cache.
"""

from __future__ import annotations

from ..protocol.masking import mask_key, mask_keys
from .declared import DEFAULTS, DISPATCH_MODES, Problem
from .hosts import HOSTS_REFRESH_SECONDS, HOSTS_REREAD_SECONDS, HostConfig
from .rules import DOCUMENTED_KEYS, KEY_RE, validate
from .settings import (
    IndexNowSettings,
    clear_cache,
    command_units_enabled,
    get_settings,
    is_enabled,
    settings_fingerprint,
)

__all__ = [
    "DEFAULTS",
    "DISPATCH_MODES",
    "DOCUMENTED_KEYS",
    "HOSTS_REFRESH_SECONDS",
    "HOSTS_REREAD_SECONDS",
    "KEY_RE",
    "HostConfig",
    "IndexNowSettings",
    "Problem",
    "clear_cache",
    "command_units_enabled",
    "get_settings",
    "is_enabled",
    "mask_key",
    "mask_keys",
    "settings_fingerprint",
    "validate",
]
