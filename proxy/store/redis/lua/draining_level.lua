-- An amount that drains at a constant rate (token_bucket's permits drawn, leaky_bucket's water),
-- kept as the time it will have drained away (GCRA's theoretical arrival time), in a string.
local function make_draining_level()
  local draining_level = {}

  function draining_level.load(key)
    return {empty_at = tonumber(redis.call('GET', key)) or 0}
  end

  -- The level at `now`, with `rate` = {permits, period (µs)}.
  function draining_level.at(s, now, p)
    if s.empty_at > now then
      return (s.empty_at - now) * p[1] / p[2]
    end
    return 0
  end

  -- Time to drain `amount` permits, in whole µs rounded up.
  function draining_level.time_for(amount, p)
    return ceil_us(amount * p[2] / p[1])
  end

  -- Takes `permits` at `now` (in delay mode they are taken at once, whatever the hold):
  -- the commit of both buckets.
  function draining_level.commit(key, s, now, permits, hold, p)
    s.empty_at = math.max(s.empty_at, now) + draining_level.time_for(permits, p)
  end

  -- Takes back the `permits` taken at `decided_at`, less what may have drained of them since
  -- (as though they drained first): never more than the level would hold without them.
  function draining_level.refund(key, s, decided_at, now, permits, hold, p)
    local back = draining_level.time_for(permits, p) - math.max(0, now - decided_at)
    if back <= 0 or s.empty_at <= now then
      return false
    end
    s.empty_at = math.max(now, s.empty_at - back)
    return true
  end

  -- Kept until drained (expire_at's rule), in the same command.
  function draining_level.save(key, s, now)
    if given_clock then
      redis.call('SET', key, whole(s.empty_at))
      return
    end
    redis.call('SET', key, whole(s.empty_at), 'PX',
      whole(math.max(1, math.ceil((s.empty_at - now) / 1000))))
  end

  -- Whole permits of room left in a bucket of `capacity`, and the time until it is empty.
  function draining_level.status(s, now, p, capacity)
    local level = draining_level.at(s, now, p)
    local room = capacity - level
    local remaining = 0
    if room > 0 then
      remaining = math.floor(room + TOLERANCE)
    end
    return remaining, draining_level.time_for(level, p)
  end
  return draining_level
end
