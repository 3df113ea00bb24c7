-- sliding_log: one timestamp per admitted permit in a sorted set (score = µs, seed 002), trimmed
-- in the same script. Parameters: limit, window (µs).
local function make_sliding_log()
  local sliding_log = {}

  function sliding_log.load(key)
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    return {key = key, newest = tonumber(newest[2])}
  end

  -- Permits logged inside the window that ends at `at`: timestamps t > at − window.
  local function inside(s, at, length)
    return redis.call('ZCOUNT', s.key, '(' .. string.format('%.17g', at - length), '+inf')
  end

  -- The later of `now` and the newest stamp (a reservation already logged), and the stamps
  -- inside the window that ends there.
  local function latest_and_inside(s, now, length)
    local at = now
    if s.newest and s.newest > at then
      at = s.newest
    end
    if not s.newest then
      return at, 0
    end
    return at, inside(s, at, length)
  end

  function sliding_log.evaluate(s, now, cost, p, policy)
    local limit, length = p[1], p[2]
    if cost > limit then
      return verdict_at(NEVER, now, policy)
    end
    -- Arrival order: never admit before a reservation already logged.
    local from, count = latest_and_inside(s, now, length)
    if count + cost <= limit then
      return verdict_at(from, now, policy)
    end
    -- The oldest `excess` timestamps must leave the window; timestamp t leaves at t + window.
    local excess = count + cost - limit
    local last = redis.call('ZRANGEBYSCORE', s.key, '(' .. string.format('%.17g', from - length),
      '+inf', 'WITHSCORES', 'LIMIT', excess - 1, 1)
    return verdict_at(math.max(from, tonumber(last[2]) + length), now, policy)
  end

  function sliding_log.commit(key, s, now, cost, hold, p, permit)
    local length = p[2]
    local at = now + hold
    -- Timestamps outside the window that ends now can never count again. (Those that leave it
    -- before `at` would not count either, but a refund of this commit needs them back.)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - length)
    -- Members are named after the request's permit id (unique per request), so that a refund
    -- finds them.
    local stamp = string.format('%.17g', at)
    local args = {}
    for i = 1, cost do
      args[#args + 1] = stamp
      args[#args + 1] = permit .. ':' .. i
      if #args >= 1000 or i == cost then
        redis.call('ZADD', key, unpack(args))
        args = {}
      end
    end
    s.newest = at
    expire_at(key, at + length, now)
  end

  -- Logs a cost learnt after the response (a settlement), whether it fits or not, but never more
  -- stamps than the limit: past it, the window is full until its oldest stamp leaves.
  function sliding_log.charge(key, s, now, cost, hold, p, permit)
    local limit, length = p[1], p[2]
    local at, count = latest_and_inside(s, now, length)
    local logged = math.min(cost, limit - math.min(count, limit))
    if logged > 0 then
      sliding_log.commit(key, s, at, logged, 0, p, permit)
    end
  end
  -- A settlement's refund is kept, as the memory log keeps it (its stamps have no names there).
  sliding_log.keeps_refunds = true

  -- Removes the timestamps commit() logged under `permit`.
  function sliding_log.refund(key, s, decided_at, now, cost, hold, p, permit)
    remove_members(key, permit, cost)
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    s.newest = tonumber(newest[2])
    return false
  end

  function sliding_log.status(s, now, p)
    local limit, length = p[1], p[2]
    if not s.newest then
      return limit, 0
    end
    local reset = math.max(0, s.newest + length - now)
    if s.newest > now then
      return 0, reset -- reservations are waiting: nothing left now
    end
    return limit - math.min(inside(s, now, length), limit), reset
  end
  return sliding_log
end
