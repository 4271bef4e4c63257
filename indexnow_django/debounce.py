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

Layout on Redis (Django's ``RedisCache`` or django-redis), per engine, all
under one prefix built once by the cache's key function:

* time windows as wide as the TTL; a URL's entry lives in the window of its
  claim, in one of 16,384 small hashes (kept in Redis's compact listpack
  encoding), under a 6-byte field (the URL's 8-byte BLAKE2s digest less the
  two bytes that chose the hash) whose value is the claim number;
* per claim, a small hash: claimed or accepted, the side, when it was
  accepted, and who holds it. Recording or releasing a claim is one write
  whatever the number of URLs.

A URL is "sent within the TTL" when its entry in the current or the previous
window belongs to an accepted claim of the same side younger than the TTL. A
claim is one server-side script call per batch; its keys expire with their
window. About 14 bytes of Redis per URL, beyond a fixed 2.5 MB or so per
engine once the 16,384 hashes exist.

Any other cache backend keeps working through Django's cache API (one key per
URL and engine, ``get_many``/``set_many`` per batch): slower and larger, and
claims there narrow the race between processes without closing it.

The store never stops a send: when the cache cannot be reached every URL is
sent as if nothing had been sent before, and a warning says so.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import BaseCache, caches

from .client import Engine
from .compat import redis_cache_client

logger = logging.getLogger(__name__)

__all__ = ["Claim", "DebounceStore", "url_digest"]

KEY_PREFIX = "indexnow:debounce:"
#: Side of a URL: public (its page is there) or gone (unpublished, deleted).
PUBLIC, GONE = "0", "1"
#: Windows expire this long after they stop being consulted (clock skew between hosts).
EXPIRY_SLACK = 60
_SIX_BITS = bytes(n % 64 for n in range(256))

# One call per batch. Entries: the window's shard hash (prefix .. window ..
# ':' .. 2 bytes), field = the 6 last digest bytes, value = claim number.
# Claims: prefix .. 't:' .. number -> {s = 'c'|'a', g = side, t = accepted at,
# h = holder, w = window}. Returns the claim numbers, one verdict character
# per URL of each side (w: may send, d: debounced, h: in flight elsewhere)
# and the claims (number, holder) of the URLs in flight elsewhere.
_CLAIM_SCRIPT = """
local P, now, W, ttl, cttl, holder, mode = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]),
    tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7]
local write, force = mode ~= 'peek', mode == 'force'
local call, byte, sub = redis.call, string.byte, string.sub
local w = math.floor(now / W)
local cur, prev = P .. w .. ':', P .. (w - 1) .. ':'
local expire = (w + 2) * W + tonumber(ARGV[10])
local look_back = call('EXISTS', prev .. 'm') == 1
-- The window's marker: one bit per hash that already has its expiry.
local mark = cur .. 'm'
local stamps = call('GET', mark) or ''
local floor = math.floor
local claims, held, stamped = {}, {}, {}

local function judge(v, g)
    local st = claims[v]
    if st == nil then
        st = call('HMGET', P .. 't:' .. v, 's', 'g', 't', 'h')
        if not st[1] then st = false end
        claims[v] = st
    end
    if not st then return nil end
    if st[1] == 'c' then
        if st[4] == holder or st[2] ~= g then return 'w' end
        held[v] = st[4]
        return 'h'
    end
    if st[2] == g and now - tonumber(st[3]) < ttl then return 'd' end
    return 'w'
end

local function run(blob, g)
    if #blob == 0 then return '', false end
    local tok = false
    if write then
        tok = call('INCR', P .. 'n')
        local key = P .. 't:' .. tok
        call('HSET', key, 's', 'c', 'g', g, 'h', holder, 'w', w)
        call('EXPIRE', key, cttl)
        tok = tostring(tok)
    end
    local out, n = {}, 0
    for i = 1, #blob, 8 do
        -- Two bytes name the hash (the client sent the second one reduced to 6 bits).
        local suffix = sub(blob, i, i + 1)
        local key = cur .. suffix
        local f = sub(blob, i + 2, i + 7)
        local c = nil
        if force then
            call('HSET', key, f, tok)
            c = 'w'
        elseif write and call('HSETNX', key, f, tok) == 1 then
            -- New in this window (most URLs of a bulk submission): one call.
            c = 'w'
            if look_back then
                local v = call('HGET', prev .. suffix, f)
                local earlier = v and judge(v, g)
                if earlier and earlier ~= 'w' then
                    c = earlier
                    call('HDEL', key, f)
                end
            end
        else
            local v = call('HGET', key, f)
            if v then c = judge(v, g) end
            if not c and look_back then
                v = call('HGET', prev .. suffix, f)
                if v then c = judge(v, g) end
            end
            c = c or 'w'
            if c == 'w' and write then call('HSET', key, f, tok) end
        end
        if c == 'w' and write and not stamped[suffix] then
            stamped[suffix] = true
            local a, b = byte(suffix, 1, 2)
            local s = a * 64 + b
            if floor((byte(stamps, floor(s / 8) + 1) or 0) / 2 ^ (7 - s % 8)) % 2 == 0 then
                call('EXPIREAT', key, expire)
                call('SETBIT', mark, s, 1)
            end
        end
        n = n + 1
        out[n] = c
    end
    return table.concat(out), tok
end

local verdicts_public, tok_public = run(ARGV[8], '0')
local verdicts_gone, tok_gone = run(ARGV[9], '1')
if write and (tok_public or tok_gone) then
    call('EXPIREAT', mark, expire)
end
local holders = {}
for v, h in pairs(held) do
    holders[#holders + 1] = v
    holders[#holders + 1] = h
end
return {tok_public or '', tok_gone or '', verdicts_public, verdicts_gone, holders, w}
"""


def url_digest(url: str) -> bytes:
    """The 8-byte digest that stands for ``url`` in the store."""
    return hashlib.blake2s(url.encode(), digest_size=8).digest()


def _digests(urls: list[str]) -> bytes:
    """:func:`url_digest` of each URL, end to end (inlined: this runs per URL), with the
    second byte of each reduced to the 6 bits that choose the hash (as the script wants)."""
    blake2s = hashlib.blake2s
    digests = bytearray(b"".join([blake2s(url.encode(), digest_size=8).digest() for url in urls]))
    digests[1::8] = digests[1::8].translate(_SIX_BITS)
    return bytes(digests)


def _engine_id(engine: Engine) -> str:
    return hashlib.blake2s(engine.endpoint.encode(), digest_size=5).hexdigest()


@dataclass
class Claim:
    """The URLs of one batch that one sender may post to one engine, and how to settle them."""

    engine: Engine
    #: The URLs this sender may post, in the order given.
    urls: list[str] = field(default_factory=list)
    #: How many URLs were left out (accepted within the TTL, or in flight elsewhere).
    debounced: int = 0
    #: The claims to record or release: ``(claim id, side, window)``.
    handles: list[tuple[str, str, int]] = field(default_factory=list)


class DebounceStore:
    """Claims, records and releases URLs per engine endpoint; see the module."""

    def __init__(
        self,
        cache_alias: str,
        ttl: int,
        claim_ttl: int = 120,
        *,
        queue_name: str | None = None,
    ) -> None:
        self.cache_alias = cache_alias
        self.ttl = ttl
        self.claim_ttl = max(1, int(claim_ttl))
        #: The rq queue whose jobs hold claims (to tell a dead holder from a live one).
        self.queue_name = queue_name
        #: The cache could not be reached since this store was made.
        self.unreachable = False

    @property
    def enabled(self) -> bool:
        return self.ttl > 0

    @property
    def cache(self) -> BaseCache:
        return caches[self.cache_alias]

    # ------------------------------------------------------------------ public

    def claim(
        self,
        engine: Engine,
        urls: Sequence[str],
        *,
        gone: Collection[str] = (),
        force: bool = False,
    ) -> Claim:
        """Claim ``urls`` for ``engine``: the returned :class:`Claim` lists those to post.

        ``gone`` holds the URLs of ``urls`` whose page is gone (the others are
        public). A URL accepted within the TTL on the same side, or in flight
        for a live sender, is left out; ``force`` claims every URL. When the
        cache cannot be reached every URL may be sent.
        """
        if not self.enabled or not urls:
            return Claim(engine, list(urls))
        try:
            return self._claim(engine, urls, gone, "force" if force else "claim")
        except Exception as exc:
            self._unavailable("claim", engine, len(urls), exc)
            return Claim(engine, list(urls))

    def filter_new(
        self, engine: Engine, urls: Sequence[str], *, gone: Collection[str] = ()
    ) -> list[str]:
        """The URLs of ``urls`` that a claim for ``engine`` would let through now. Read only."""
        if not self.enabled or not urls:
            return list(urls)
        try:
            return self._claim(engine, urls, gone, "peek").urls
        except Exception as exc:
            self._unavailable("look-up", engine, len(urls), exc)
            return list(urls)

    def record(self, claim: Claim) -> None:
        """The engine accepted ``claim.urls``: do not send them to it again within the TTL."""
        self._settle(claim, accepted=True)

    def release(self, claim: Claim) -> None:
        """The engine did not accept ``claim.urls``: a later attempt may send them."""
        self._settle(claim, accepted=False)

    # ------------------------------------------------------------------ claims

    def _claim(
        self, engine: Engine, urls: Sequence[str], gone: Collection[str], mode: str
    ) -> Claim:
        gone = gone if isinstance(gone, (set, frozenset)) else frozenset(gone)
        cache = self.cache
        target = redis_cache_client(cache)
        holder = _holder()
        if target is None:
            return self._claim_through_cache_api(cache, engine, urls, gone, mode, holder)
        client, make_key = target
        prefix = make_key(f"{KEY_PREFIX}{_engine_id(engine)}:")
        pending: dict[str, list[str]] = {PUBLIC: list(urls), GONE: []}
        if gone:
            pending[PUBLIC] = [url for url in urls if url not in gone]
            pending[GONE] = [url for url in urls if url in gone]
        claim = Claim(engine)
        for attempt in range(2):  # a second pass only to take over the claims of dead holders
            reply = client.eval(
                _CLAIM_SCRIPT,
                0,
                prefix,
                int(time.time()),
                self.ttl,
                self.ttl,
                self.claim_ttl,
                holder,
                mode,
                _digests(pending[PUBLIC]),
                _digests(pending[GONE]),
                EXPIRY_SLACK,
            )
            window = int(reply[5])
            held: dict[str, list[str]] = {PUBLIC: [], GONE: []}
            for side, token, answer in ((PUBLIC, reply[0], reply[2]), (GONE, reply[1], reply[3])):
                if token:
                    claim.handles.append((_text(token), side, window))
                verdicts = _text(answer)
                if len(verdicts) != len(pending[side]):
                    raise ValueError("the claim script answered for another number of URLs")
                if verdicts.count("w") == len(verdicts):  # all new (most of a bulk submission)
                    claim.urls.extend(pending[side])
                    continue
                for url, verdict in zip(pending[side], verdicts, strict=True):
                    if verdict == "w":
                        claim.urls.append(url)
                    elif verdict == "h":
                        held[side].append(url)
                    else:
                        claim.debounced += 1
            holders = [_text(item) for item in reply[4]]
            dead = [
                token
                for token, who in zip(holders[::2], holders[1::2], strict=True)
                if not self._alive(who)
            ]
            if attempt or not dead or mode == "peek":
                break
            # The holders of these claims died before settling them: free their URLs.
            client.delete(*(f"{prefix}t:{token}" for token in dead))
            pending = held
        claim.debounced += len(held[PUBLIC]) + len(held[GONE])
        if gone or attempt:  # keep the caller's order
            allowed = set(claim.urls)
            claim.urls = [url for url in urls if url in allowed]
        return claim

    def _settle(self, claim: Claim, *, accepted: bool) -> None:
        if not self.enabled or not claim.handles:
            return
        try:
            cache = self.cache
            target = redis_cache_client(cache)
            if target is None:
                self._settle_through_cache_api(cache, claim, accepted)
                return
            client, make_key = target
            prefix = make_key(f"{KEY_PREFIX}{_engine_id(claim.engine)}:")
            pipe = client.pipeline(transaction=False)
            for token, side, window in claim.handles:
                key = f"{prefix}t:{token}"
                if accepted:
                    pipe.hset(key, mapping={"s": "a", "g": side, "t": int(time.time())})
                    pipe.expireat(key, (window + 2) * self.ttl + EXPIRY_SLACK)
                else:
                    pipe.delete(key)
            pipe.execute()
        except Exception as exc:
            self._unavailable(
                "record" if accepted else "release", claim.engine, len(claim.urls), exc
            )

    # ------------------------------------------------------- Django cache API

    def _url_key(self, engine: Engine, url: str) -> str:
        return f"{KEY_PREFIX}{_engine_id(engine)}:{url_digest(url).hex()}"

    def _claim_key(self, engine: Engine, token: str) -> str:
        return f"{KEY_PREFIX}{_engine_id(engine)}:t:{token}"

    def _claim_through_cache_api(
        self,
        cache: BaseCache,
        engine: Engine,
        urls: Sequence[str],
        gone: Collection[str],
        mode: str,
        holder: str,
    ) -> Claim:
        """The same rules as the script, with ``get_many``/``set_many`` (not atomic)."""
        keys = {url: self._url_key(engine, url) for url in urls}
        entries = cache.get_many(list(keys.values())) if mode != "force" else {}
        tokens = {self._claim_key(engine, token) for token in entries.values()}
        states = cache.get_many(list(tokens)) if tokens else {}
        now = time.time()
        claim = Claim(engine)
        alive: dict[str, bool] = {}  # holder -> whether it may still settle its claim
        dead_claims: set[str] = set()
        for url, key in keys.items():
            side = GONE if url in gone else PUBLIC
            verdict = "w"
            token = entries.get(key)
            state = states.get(self._claim_key(engine, token)) if token else None
            if state is not None:
                verdict = _judge(state, side, holder, now, self.ttl)
                who = state[3]
                if verdict == "h" and mode != "peek":
                    if who not in alive:
                        alive[who] = self._alive(who)
                    if not alive[who]:
                        dead_claims.add(str(token))
                        verdict = "w"
            if verdict == "w":
                claim.urls.append(url)
            else:
                claim.debounced += 1
        if mode == "peek" or not claim.urls:
            return claim
        if dead_claims:
            cache.delete_many([self._claim_key(engine, token) for token in dead_claims])
        writes: dict[str, Any] = {}
        claims: dict[str, Any] = {}
        for side in (PUBLIC, GONE):
            mine = [url for url in claim.urls if (url in gone) == (side == GONE)]
            if not mine:
                continue
            token = uuid.uuid4().hex[:16]
            claim.handles.append((token, side, 0))
            claims[self._claim_key(engine, token)] = ("c", side, 0.0, holder)
            writes.update(dict.fromkeys((keys[url] for url in mine), token))
        cache.set_many(claims, timeout=self.claim_ttl)
        cache.set_many(writes, timeout=self.ttl + self.claim_ttl)
        return claim

    def _settle_through_cache_api(self, cache: BaseCache, claim: Claim, accepted: bool) -> None:
        keys = [self._claim_key(claim.engine, token) for token, _, _ in claim.handles]
        if not accepted:
            cache.delete_many(keys)
            return
        now = time.time()
        cache.set_many(
            {
                key: ("a", side, now, "")
                for key, (_, side, _) in zip(keys, claim.handles, strict=True)
            },
            timeout=self.ttl + self.claim_ttl,
        )

    # ------------------------------------------------------------------ holders

    def _alive(self, holder: str) -> bool:
        """Whether the sender ``holder`` may still post (and settle) its claim."""
        kind, _, rest = holder.partition(":")
        try:
            if kind == "job":
                return _job_alive(rest, self.queue_name)
            if kind == "proc":
                host, pid, _ = rest.split(":", 2)
                if host != socket.gethostname():
                    return True
                os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except Exception:  # cannot tell: the claim stands until it expires
            return True
        return True

    def _unavailable(self, action: str, engine: Engine, count: int, exc: Exception) -> None:
        self.unreachable = True
        logger.warning(
            "IndexNow debounce cache %r unavailable (%s: %s): %s skipped for engine=%s count=%d",
            self.cache_alias,
            type(exc).__name__,
            exc,
            action,
            engine.name,
            count,
        )


def _judge(state: tuple[str, str, float, str], side: str, holder: str, now: float, ttl: int) -> str:
    """The script's verdict for one entry, through the cache API: ``w``, ``d`` or ``h``."""
    status, claimed_side, accepted_at, who = state
    if status == "c":
        if who == holder or claimed_side != side:
            return "w"
        return "h"
    if claimed_side == side and now - accepted_at < ttl:
        return "d"
    return "w"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _holder() -> str:
    """Who claims: the rq job running here (a requeued job takes its own claims back),
    else this process, with a fresh suffix (threads of one process never share a claim)."""
    from rq import get_current_job

    job = get_current_job()
    if job is not None:
        return f"job:{job.id}"
    return f"proc:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _job_alive(job_id: str, queue_name: str | None) -> bool:
    """Whether the rq job ``job_id`` is still waiting or running (not failed, gone, ended)."""
    from rq import get_current_job
    from rq.exceptions import NoSuchJobError
    from rq.job import Job, JobStatus

    current = get_current_job()
    if current is not None:
        connection = current.connection
    elif queue_name is not None:
        from .queue import connection as queue_connection

        connection = queue_connection(queue_name)
    else:
        return True
    try:
        status = Job.fetch(job_id, connection=connection).get_status(refresh=False)
    except NoSuchJobError:
        return False
    return status in {
        JobStatus.QUEUED,
        JobStatus.STARTED,
        JobStatus.SCHEDULED,
        JobStatus.DEFERRED,
    }
