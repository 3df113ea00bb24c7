-- sliding_window: estimate = previous·(1 − elapsed/window) + current. Hash {w = window of
-- current, p = previous, c = current}. Parameters: limit, window (µs).
local function make_sliding_window()
  local sliding_window = {}

  function sliding_window.load(key)
    local v = redis.call('HMGET', key, 'w', 'p', 'c')
    return {w = tonumber(v[1]) or 0, p = tonumber(v[2]) or 0, c = tonumber(v[3]) or 0}
  end

  local function counted(s)
    return s.p ~= 0 or s.c ~= 0
  end

  -- The counts as they stand in `window`.
  local function counts_in(s, window)
    if not counted(s) then
      return 0, 0
    end
    if window == s.w then
      return s.p, s.c
    end
    if window - 1 == s.w then
      return s.c, 0
    end
    return 0, 0
  end

  function sliding_window.evaluate(s, now, cost, p, policy)
    local limit, length = p[1], p[2]
    if cost > limit then
      return verdict_at(NEVER, now, policy)
    end
    local window = period_index(now, length)
    local from = now
    -- Arrival order: never admit before a window that already holds reservations.
    if counted(s) and s.w > window then
      window = s.w
      from = window * length
    end
    -- Two windows later every count has aged out, and cost <= limit fits.
    for step = 0, 2 do
      local previous, current = counts_in(s, window)
      local start = window * length
      local earliest = 0
      if step == 0 then
        earliest = from - start
      end
      if current + cost <= limit then
        -- previous·(W − e) + (current + cost)·W <= limit·W  ⇔  e >= W·excess / previous
        local excess = previous + current + cost - limit
        local needed = 0
        if excess > 0 then
          needed = math.ceil(excess * length / previous)
        end
        local elapsed = math.max(earliest, needed)
        if elapsed < length then
          return verdict_at(start + elapsed, now, policy)
        end
      end
      window = window + 1
    end
    return verdict_at(NEVER, now, policy)
  end

  function sliding_window.commit(key, s, now, cost, hold, p)
    local length = p[2]
    local window = period_index(now + hold, length)
    local previous, current = counts_in(s, window)
    s.w, s.p, s.c = window, previous, current + cost
  end

  -- Takes back what commit() added from the window it went to, current or now previous. As with
  -- fixed_window, a later window that would be left empty keeps its reservations.
  function sliding_window.refund(key, s, decided_at, now, cost, hold, p)
    local window = period_index(decided_at + hold, p[2])
    if s.w == window and s.p == 0 and s.c <= cost and window > period_index(now, p[2]) then
      return false
    end
    if s.w == window then
      s.c = math.max(0, s.c - cost)
    elseif s.w == window + 1 then
      s.p = math.max(0, s.p - cost)
    else
      return false
    end
    return true
  end

  function sliding_window.save(key, s, now, p)
    redis.call('HSET', key, 'w', whole(s.w), 'p', whole(s.p), 'c', whole(s.c))
    expire_at(key, (s.w + 2) * p[2], now)
  end

  function sliding_window.status(s, now, p)
    local limit, length = p[1], p[2]
    local window = period_index(now, length)
    if not counted(s) then
      return limit, 0
    end
    local periods = 1
    if s.c ~= 0 then
      periods = 2
    end
    local reset = math.max(0, (s.w + periods) * length - now)
    if s.w > window then
      return 0, reset -- reservations are waiting: nothing left now
    end
    local previous, current = counts_in(s, window)
    local left_of_previous = 1 - (now - window * length) / length
    local headroom = limit - current - previous * left_of_previous + TOLERANCE
    if headroom > 0 then
      return math.floor(headroom), reset
    end
    return 0, reset
  end
  return sliding_window
end
