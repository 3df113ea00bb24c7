-- fixed_window: one counter per epoch-aligned window. Hash {w = window index, n = permits}.
-- Parameters: limit, window (µs).
local function make_fixed_window()
  local fixed_window = {}

  function fixed_window.load(key)
    local v = redis.call('HMGET', key, 'w', 'n')
    return {w = tonumber(v[1]) or 0, n = tonumber(v[2]) or 0}
  end

  function fixed_window.evaluate(s, now, cost, p, policy)
    local limit, length = p[1], p[2]
    if cost > limit then
      return verdict_at(NEVER, now, policy)
    end
    local window = period_index(now, length)
    local used = 0
    -- Arrival order: never admit before a window that already holds reservations.
    if s.n ~= 0 and s.w >= window then
      window = s.w
      used = s.n
    end
    if used + cost > limit then
      window = window + 1
    end
    return verdict_at(math.max(now, window * length), now, policy)
  end

  function fixed_window.commit(key, s, now, cost, hold, p)
    local length = p[2]
    local window = period_index(now + hold, length)
    if s.n ~= 0 and s.w == window then
      s.n = s.n + cost
    else
      s.w, s.n = window, cost
    end
  end

  -- Takes back what commit() added, if its window is still the key's (see refund.lua). A commit
  -- into a later window (delay mode) replaced the count of the current one; emptied, that window
  -- would let the current one admit again, so its reservations are kept (admitting less).
  function fixed_window.refund(key, s, decided_at, now, cost, hold, p)
    local window = period_index(decided_at + hold, p[2])
    if s.n == 0 or s.w ~= window or (s.n <= cost and window > period_index(now, p[2])) then
      return false
    end
    s.n = math.max(0, s.n - cost)
    return true
  end

  function fixed_window.save(key, s, now, p)
    redis.call('HSET', key, 'w', whole(s.w), 'n', whole(s.n))
    expire_at(key, (s.w + 1) * p[2], now)
  end

  function fixed_window.status(s, now, p)
    local limit, length = p[1], p[2]
    local current = period_index(now, length)
    local window, used = current, 0
    if s.n ~= 0 and s.w >= current then
      window, used = s.w, s.n
    end
    local remaining = 0
    if window == current then
      remaining = limit - used
    end
    return remaining, (window + 1) * length - now
  end
  return fixed_window
end
