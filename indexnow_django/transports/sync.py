"""``DISPATCH: "sync"``: sent by the process that flushed, after the response, no retries."""

from __future__ import annotations

from .base import Transport

__all__ = ["SyncTransport"]


class SyncTransport(Transport):
    """Every flush sent from the process that made it (see :class:`.base.Transport`)."""

    name = "sync"
    in_process = True
