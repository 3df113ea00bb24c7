-- leaky_bucket: nginx limit_req (GCRA). The bucket holds burst + 1 requests and leaks at `rate`;
-- reject mode is `nodelay`, delay mode holds a request until those before it have leaked.
-- Parameters: rate permits, rate period (µs), burst.
local function make_leaky_bucket()
  local draining_level = make_draining_level()
  local leaky_bucket = {
    load = draining_level.load, commit = draining_level.commit, save = draining_level.save,
    refund = draining_level.refund,
  }

  function leaky_bucket.evaluate(s, now, cost, p, policy)
    local capacity = p[3] + 1
    if cost > largest_cost(capacity) then
      return verdict_at(NEVER, now, policy)
    end
    local level = draining_level.at(s, now, p)
    local overflow = level + cost - capacity
    if overflow > TOLERANCE then
      return 0, 0, draining_level.time_for(overflow, p) -- rejected in both modes, as nginx does
    end
    if not policy.delay then
      return verdict_at(now, now, policy)
    end
    return verdict_at(now + draining_level.time_for(level, p), now, policy)
  end

  function leaky_bucket.status(s, now, p)
    return draining_level.status(s, now, p, p[3] + 1)
  end
  return leaky_bucket
end
