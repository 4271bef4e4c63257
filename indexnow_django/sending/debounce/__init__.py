"""The debounce store: which URLs each engine accepted recently, and on which side.

A URL accepted by an engine is not sent to that engine again within
``DEBOUNCE["TTL"]`` seconds, unless it changed *side* since: a URL sent as
public and now gone (unpublished, deleted), or the reverse, is sent again.
Each engine endpoint has its own record, so two endpoints on one host are two
engines.

A sender first *claims* a batch (:meth:`DebounceStore.claim`): the URLs it may
post, marked as in flight under a claim of its own. After the POST it either
*records* the claim (accepted: one write for the whole batch) or *releases*
it (not accepted: the URLs are free again). A URL in flight for another
sender is left out, so two workers racing for a URL send it once; but a claim
never outlives its holder in a way that silences a later send: a requeued job
takes back its own claims, and the claims of a holder that died (a work horse
killed mid-POST, a failed job, a process that is gone) are taken over at once.

One layer per module:

* :mod:`.store`: the API (:class:`DebounceStore`), who holds a claim and
  whether it is alive, which layout a cache takes, what happens when the
  cache cannot be reached;
* :mod:`.redis_store`: the layout on Redis (compact hashes per time window,
  one server-side script call per batch, the script in ``claim.lua``);
* :mod:`.cache_store`: the same rules through Django's cache API, for any
  other cache backend;
* :mod:`.claims`: what they share (a :class:`Claim`, the sides, key names).
"""

from __future__ import annotations

from .claims import Claim, url_digest
from .store import DebounceStore

__all__ = ["Claim", "DebounceStore", "url_digest"]
