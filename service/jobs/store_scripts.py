"""The Lua scripts that change job records in Redis atomically (keys and rules: ``service.jobs.store``).

Each script's comment names its KEYS and ARGV in the order ``service.jobs.store.JobStore`` passes them.
"""

from __future__ import annotations

__all__ = ["CANCEL", "CREATE", "FINISH_CHUNK", "START_CHUNK", "STORED_BYTES"]

START_CHUNK = """
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 'chunk_done' end
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'missing' end
if status == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[2])
  return 'running'
end
return status
"""

# KEYS: meta, out, in, open, bytes, expiry. ARGV: chunk, blob, n_lines, n_failed, now, ttl, job id, abandoned
# (0/1), reserved result bytes per item
FINISH_CHUNK = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end
local in_len = redis.call('HSTRLEN', KEYS[3], ARGV[1])
local out_len = string.len(ARGV[2])
redis.call('HDEL', KEYS[3], ARGV[1])
local out_bytes = redis.call('HINCRBY', KEYS[1], 'out_bytes', out_len)
redis.call('HINCRBY', KEYS[1], 'n_done', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'n_failed', ARGV[4])
if ARGV[8] == '1' then redis.call('HINCRBY', KEYS[1], 'chunks_abandoned', 1) end
local done = redis.call('HINCRBY', KEYS[1], 'chunks_done', 1)
redis.call('EXPIRE', KEYS[2], redis.call('TTL', KEYS[1]))
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'queued' or status == 'running' then
  if redis.call('HEXISTS', KEYS[4], ARGV[7]) == 1 then
    redis.call('HINCRBY', KEYS[4], ARGV[7], -tonumber(ARGV[3]))
  end
  if redis.call('HEXISTS', KEYS[5], ARGV[7]) == 1 then
    redis.call('HINCRBY', KEYS[5], ARGV[7], out_len - in_len - tonumber(ARGV[3]) * tonumber(ARGV[9]))
  end
  if done >= tonumber(redis.call('HGET', KEYS[1], 'n_chunks')) then
    local failed = tonumber(redis.call('HGET', KEYS[1], 'n_failed') or '0')
    local abandoned = tonumber(redis.call('HGET', KEYS[1], 'chunks_abandoned') or '0')
    local final = (failed > 0 or abandoned > 0) and 'failed' or 'succeeded'  -- store.py's status rule
    redis.call('HSET', KEYS[1], 'status', final, 'finished_at', ARGV[5])
    redis.call('HDEL', KEYS[4], ARGV[7])
    redis.call('DEL', KEYS[3])
    redis.call('EXPIRE', KEYS[1], ARGV[6])
    redis.call('EXPIRE', KEYS[2], ARGV[6])
    redis.call('HSET', KEYS[5], ARGV[7], out_bytes)
    redis.call('ZADD', KEYS[6], tonumber(ARGV[5]) + tonumber(ARGV[6]), ARGV[7])
  end
elseif redis.call('HEXISTS', KEYS[5], ARGV[7]) == 1 then
  redis.call('HINCRBY', KEYS[5], ARGV[7], out_len)  -- a chunk that ended after its job was cancelled
end
return 1
"""

# KEYS: meta (the new job's), open, idempotency key (or meta again when none), bytes, expiry. ARGV: job id,
# n_items, ttl, digest, has key (0/1), meta-key prefix, reserved bytes, expiry time, then field, value, ... of
# the new job's hash.
# Claim and creation are one step: of two requests with one key, the second finds the first's job, never
# a binding whose job does not exist yet.
CREATE = """
if ARGV[5] == '1' then
  local bound = redis.call('GET', KEYS[3])
  if bound then
    local earlier = string.match(bound, '^(%S+) ')
    if earlier and redis.call('EXISTS', ARGV[6] .. earlier) == 1 then return bound end
  end
  redis.call('SET', KEYS[3], ARGV[1] .. ' ' .. ARGV[4], 'EX', ARGV[3])
end
redis.call('HSET', KEYS[1], unpack(ARGV, 9))
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[7])
redis.call('ZADD', KEYS[5], ARGV[8], ARGV[1])
return false
"""

# KEYS: meta, in, out, open, bytes, expiry. ARGV: now, ttl, job id, tenant check (0/1), tenant
CANCEL = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return false end
if ARGV[4] == '1' and (redis.call('HGET', KEYS[1], 'tenant') or '') ~= ARGV[5] then return false end
if status == 'queued' or status == 'running' then
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'finished_at', ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[3])
  redis.call('DEL', KEYS[2])
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  redis.call('EXPIRE', KEYS[3], ARGV[2])
  redis.call('HSET', KEYS[5], ARGV[3], redis.call('HGET', KEYS[1], 'out_bytes') or '0')
  redis.call('ZADD', KEYS[6], tonumber(ARGV[1]) + tonumber(ARGV[2]), ARGV[3])
  return 'cancelled'
end
return status
"""

# KEYS: bytes, expiry, open. ARGV: now. Forgets the jobs whose keys have expired (their bytes are gone from
# Redis, and an unfinished job that expired is no longer open), then returns {total bytes, earliest expiry}.
STORED_BYTES = """
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
for _, job in ipairs(gone) do
  redis.call('HDEL', KEYS[1], job)
  redis.call('HDEL', KEYS[3], job)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
local total = 0
for _, value in ipairs(redis.call('HVALS', KEYS[1])) do total = total + tonumber(value) end
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
return {tostring(total), first[2] or false}
"""
