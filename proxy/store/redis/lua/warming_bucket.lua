-- token_bucket with warmup: Guava's SmoothWarmingUp (seed 003), with its "pay later"
-- reservations. Hash {s = storedPermits, f = nextFreeTicket (µs)}; a new key starts cold.
-- Parameters: rate permits, rate period (µs), warmup (µs), cold_factor.
local function make_warming_bucket()
  local warming_bucket = {}

  local function shape(p)
    local warmup = p[3]
    local stable = p[2] / p[1]
    local cold = stable * p[4]
    local threshold = 0.5 * warmup / stable
    local max_permits = threshold + 2 * warmup / (stable + cold)
    return {
      stable = stable,
      threshold = threshold,
      max_permits = max_permits,
      slope = (cold - stable) / (max_permits - threshold),
      cool_down = warmup / max_permits,
    }
  end

  -- Guava's resync: credit idle time since next_free as stored permits.
  local function resync(s, now, g)
    if now > s.f then
      s.s = math.min(g.max_permits, s.s + (now - s.f) / g.cool_down)
      s.f = now
    end
  end

  -- Guava's storedPermitsToWaitTime: the area under the trapezoid, in µs.
  local function stored_permits_wait(g, stored, taken)
    local above = stored - g.threshold
    local wait = 0
    if above > 0 then
      local taken_above = math.min(above, taken)
      local length = (g.stable + above * g.slope) + (g.stable + (above - taken_above) * g.slope)
      wait = taken_above * length / 2
      taken = taken - taken_above
    end
    return wait + g.stable * taken
  end

  function warming_bucket.load(key, p, now)
    local v = redis.call('HMGET', key, 's', 'f')
    local g = shape(p)
    if not v[1] then
      return {s = g.max_permits, f = now, g = g}
    end
    return {s = tonumber(v[1]), f = tonumber(v[2]), g = g}
  end

  function warming_bucket.evaluate(s, now, cost, p, policy)
    local next_free = s.f
    if now > next_free then
      next_free = now
    end
    return verdict_at(next_free, now, policy)
  end

  function warming_bucket.commit(key, s, now, cost, hold, p)
    local g = s.g
    resync(s, now, g)
    local spent = math.min(cost, s.s)
    local fresh = cost - spent
    s.f = s.f + ceil_us(stored_permits_wait(g, s.s, spent) + fresh * g.stable)
    s.s = s.s - spent
  end

  -- A settlement's refund is kept, as the memory bucket keeps it: the permits it spent may have
  -- been stored ones or fresh ones, which cost differently.
  warming_bucket.keeps_refunds = true

  -- Takes back a commit, never more: the permits it spent return as stored ones (which never
  -- make a request cheaper), and the next free ticket moves back by the least the commit
  -- could have added (stable interval per permit), less the time elapsed since.
  function warming_bucket.refund(key, s, decided_at, now, cost, hold, p)
    local g = s.g
    resync(s, now, g)
    s.s = math.min(g.max_permits, s.s + cost)
    local back = math.floor(cost * g.stable) - math.max(0, now - decided_at)
    if back > 0 then
      s.f = math.max(now, s.f - back)
    end
    return true
  end

  function warming_bucket.save(key, s, now)
    local g = s.g
    redis.call('HSET', key, 's', s.s, 'f', whole(s.f)) -- s: stored permits, a fraction
    expire_at(key, s.f + ceil_us(math.max(0, g.max_permits - s.s) * g.cool_down), now)
  end

  function warming_bucket.status(s, now, p)
    resync(s, now, s.g)
    -- The next request always waits for the one before: one permit at most is free right now.
    if s.f <= now then
      return 1, 0
    end
    return 0, s.f - now
  end
  return warming_bucket
end
