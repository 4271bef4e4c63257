-- The debounce store's claim on Redis: one call per batch (see redis_store.py).
--
-- Entries: the window's shard hash (prefix .. window .. ':' .. 2 bytes), field = the 6
-- last digest bytes, value = claim number. Claims: prefix .. 't:' .. number -> {s = 'c'|'a',
-- g = side, t = accepted at, h = holder, w = window}.
--
-- ARGV: prefix, now, window width, ttl, claim ttl, holder, mode ('claim', 'force' or 'peek'),
-- the public URLs' digests, the gone URLs' digests (8 bytes each), expiry slack.
-- Returns the claim numbers, one verdict character per URL of each side (w: may send,
-- d: debounced, h: in flight elsewhere), the claims (number, holder) of the URLs in flight
-- elsewhere, and the window.
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
-- Once every hash of the window has its expiry (after a window's first 200,000 URLs or
-- so), nothing more to look at per URL.
local all_stamped = stamps == string.rep('\255', 2048)

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
        if c == 'w' and write and not all_stamped then
            -- The marker's bit first (arithmetic), the table only for hashes not marked yet.
            local a, b = byte(suffix, 1, 2)
            local s = a * 64 + b
            if floor((byte(stamps, floor(s / 8) + 1) or 0) / 2 ^ (7 - s % 8)) % 2 == 0
                and not stamped[suffix] then
                stamped[suffix] = true
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
