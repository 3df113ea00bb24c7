-- fixed_window: one counter per window. Hash {w = window number, n = permits}.
-- Parameters: limit, window (µs); or for calendar windows, since the time zone database is the
-- proxy's: limit, minus the length of the period before (µs; negative marks a calendar window),
-- then the bounds (µs) of the period (day, week, month, year in the limiter's time zone) that
-- holds the proxy's clock.
local function make_fixed_window()
  local fixed_window = {}

  -- Windows are numbered: epoch-aligned ones by their index, calendar ones by their start (µs).
  -- Redis's clock decides which window a request falls in, so replicas agree. Near a boundary
  -- it may be on the other side of it than the proxy's clock: before the bounds, the window is
  -- the period before (whose length the proxy sends); past them, the next one, guessed as long
  -- as this one. A guessed end moves only an expiry and a reported reset, and only until the
  -- proxy's clock passes the boundary too and sends the next period's bounds.
  local function window_at(t, p)
    local length, first, last = p[2], p[3], p[4]
    if length > 0 then
      return period_index(t, length)
    end
    if t >= last then
      return last + (last - first) * math.floor((t - last) / (last - first))
    end
    if t >= first then
      return first
    end
    return first + length * math.ceil((first - t) / -length)
  end

  local function start_of(window, p)
    local length = p[2]
    if length > 0 then
      return window * length
    end
    return window
  end

  local function end_of(window, p)
    local length, first, last = p[2], p[3], p[4]
    if length > 0 then
      return (window + 1) * length
    end
    if window >= last then
      return window + (last - first)
    end
    if window >= first then
      return last
    end
    return math.min(first, window - length)
  end

  function fixed_window.load(key)
    local v = redis.call('HMGET', key, 'w', 'n')
    return {w = tonumber(v[1]) or 0, n = tonumber(v[2]) or 0}
  end

  function fixed_window.evaluate(s, now, cost, p, policy)
    local limit = p[1]
    if cost > limit then
      return verdict_at(NEVER, now, policy)
    end
    local window = window_at(now, p)
    local used = 0
    -- Arrival order: never admit before a window that already holds reservations.
    if s.n ~= 0 and s.w >= window then
      window = s.w
      used = s.n
    end
    if used + cost > limit then
      window = window_at(end_of(window, p), p)
    end
    return verdict_at(math.max(now, start_of(window, p)), now, policy)
  end

  function fixed_window.commit(key, s, now, cost, hold, p)
    local window = window_at(now + hold, p)
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
    local window = window_at(decided_at + hold, p)
    if s.n == 0 or s.w ~= window or (s.n <= cost and window > window_at(now, p)) then
      return false
    end
    s.n = math.max(0, s.n - cost)
    return true
  end

  function fixed_window.save(key, s, now, p)
    redis.call('HSET', key, 'w', whole(s.w), 'n', whole(s.n))
    expire_at(key, end_of(s.w, p), now)
  end

  function fixed_window.status(s, now, p)
    local limit = p[1]
    local current = window_at(now, p)
    local window, used = current, 0
    if s.n ~= 0 and s.w >= current then
      window, used = s.w, s.n
    end
    local remaining = 0
    if window == current then
      remaining = limit - used
    end
    return remaining, end_of(window, p) - now
  end
  return fixed_window
end
