-- token_bucket: a new key starts full with `burst` tokens, refilled at `rate`; delay mode takes
-- the tokens at once, going negative. Parameters: rate permits, rate period (µs), burst.
local function make_token_bucket()
  local draining_level = make_draining_level()
  local token_bucket = {
    load = draining_level.load, commit = draining_level.commit, save = draining_level.save,
    refund = draining_level.refund,
  }

  function token_bucket.evaluate(s, now, cost, p, policy)
    local burst = p[3]
    if not policy.delay and cost > largest_cost(burst) then
      return verdict_at(NEVER, now, policy)
    end
    local shortfall = draining_level.at(s, now, p) + cost - burst
    if shortfall <= TOLERANCE then
      return verdict_at(now, now, policy)
    end
    return verdict_at(now + draining_level.time_for(shortfall, p), now, policy)
  end

  function token_bucket.status(s, now, p)
    return draining_level.status(s, now, p, p[3])
  end
  return token_bucket
end
