package redisstore

import "github.com/redis/go-redis/v9"

// The Lua scripts run atomically on the server. go-redis sends EVALSHA and
// falls back to EVAL when the server has forgotten a script (after a
// restart). Numbers that must stay exact (Unix milliseconds and
// microseconds) are formatted with %.0f: Lua 5.1's tostring would switch to
// exponent notation.

// heartbeatScript: KEYS = workers zset, info hash; ARGV = id, ttl ms, JSON.
// The hash value is "<seen ms> <json>" so Seen comes from the server clock.
var heartbeatScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], string.format('%.0f', now) .. ' ' .. ARGV[3])
return 1
`)

// listWorkersScript: KEYS = workers zset, info hash. Drops every worker
// whose heartbeat expired and returns the others' hash values.
var listWorkersScript = redis.NewScript(`
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for i = 1, #dead, 500 do
  redis.call('HDEL', KEYS[2], unpack(dead, i, math.min(i + 499, #dead)))
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
local out = {}
for i = 1, #ids, 500 do
  local vals = redis.call('HMGET', KEYS[2], unpack(ids, i, math.min(i + 499, #ids)))
  for _, v in ipairs(vals) do
    if v then out[#out + 1] = v end
  end
end
return out
`)

// acquireScript: KEYS = lease, token counter; ARGV = owner, ttl ms.
// Returns the new fencing token, or 0 if the lease is held.
var acquireScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local tok = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], string.format('%.0f', tok) .. ':' .. ARGV[1], 'NX', 'PX', ARGV[2])
return tok
`)

// renewScript: KEYS = lease, token counter; ARGV = owner, ttl ms, token.
// Returns 1 when the caller holds the lease afterwards: it held it, or the
// lease had vanished and no later token was issued (then the counter is
// raised to the token, so later acquirers still get larger tokens even if
// the server lost its data).
var renewScript = redis.NewScript(`
local want = ARGV[3] .. ':' .. ARGV[1]
local cur = redis.call('GET', KEYS[1])
if cur == want then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if cur then return 0 end
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local tok = tonumber(ARGV[3])
if last > tok then return 0 end
if last < tok then redis.call('SET', KEYS[2], ARGV[3]) end
redis.call('SET', KEYS[1], want, 'PX', ARGV[2])
return 1
`)

// releaseScript: KEYS = lease; ARGV = "<token>:<owner>". Deletes the lease
// only if that value still holds it.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// limitScript is GCRA on the server clock. KEYS = bucket; ARGV = n,
// rate per minute, burst (both > 0, n <= burst). The key holds the
// theoretical arrival time (TAT) in Unix microseconds. Returns 0 when the
// n tokens are granted (and moves the TAT), else the microseconds to wait
// (and changes nothing). Rounding goes towards the safe side.
var limitScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = tonumber(ARGV[1])
local interval = 60000000 / tonumber(ARGV[2])
local tau = math.floor(interval * tonumber(ARGV[3]))
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local nxt = tat + math.ceil(interval * n)
local allow = nxt - tau
if allow > now then
  return math.ceil(allow - now)
end
redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', math.ceil((nxt - now) / 1000) + 1)
return 0
`)

// levelScript reads a bucket without changing it. KEYS = bucket. Returns
// the server time and the bucket's TAT (0 when there is none), both in
// Unix microseconds, read together.
var levelScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
return {now, tat}
`)
