-- Shared by every algorithm of the decision script. Times are whole microseconds since the Unix
-- epoch (exact in a Lua number until the year 2255); the memory store's semantics, in µs.
-- Numbers go to redis.call as whole() text, or as they are (Redis writes them exactly, if slowly);
-- only text built here with `..` needs string.format, since Lua's own conversion keeps 14 digits.
local NEVER = 1 / 0 -- math.huge: a function library may not read `math` while it loads (Redis 7.0)
local TOLERANCE = 1e-9 -- permits computed in floating point may fall a hair short

-- Index of the epoch-aligned period of `length` that holds `t` (floor division, made exact).
local function period_index(t, length)
  local index = math.floor(t / length)
  if index * length > t then
    index = index - 1
  elseif (index + 1) * length <= t then
    index = index + 1
  end
  return index
end

-- Whole microseconds, rounded up, forgiving a relative 1e-12 as the memory store does.
local function ceil_us(amount)
  if not (amount > 0) then
    return 0
  end
  return math.ceil(amount * (1 - 1e-12))
end

-- The verdict for a request that could be admitted at `admit_at`: admitted (0/1), hold and
-- retry after (µs; -1 = never). Reject mode admits only now; delay mode within max_delay.
local function verdict_at(admit_at, now, policy)
  if admit_at == NEVER then
    return 0, 0, -1
  end
  local wait = 0
  if admit_at > now then
    wait = admit_at - now
  end
  if wait == 0 then
    return 1, 0, 0
  end
  if policy.delay then
    if wait <= policy.max_delay then
      return 1, wait, 0
    end
    return 0, 0, wait - policy.max_delay
  end
  return 0, 0, wait
end

-- The largest whole cost that fits in `capacity` permits.
local function largest_cost(capacity)
  return math.floor(capacity + TOLERANCE)
end

-- A whole number as text for redis.call: Redis 7.0 writes a Lua number with '%.17g', which costs
-- several times what '%d' does (exact for whole numbers below 2^63, as every time here is).
local function whole(x)
  return string.format('%d', x)
end

-- Whether the call decides at a time it was given (a simulated clock, in tests) rather than on
-- Redis's clock. Keys then get no time to live: Redis would count it down on its own clock,
-- which the given one does not follow, and forget a state the given clock still needs.
local given_clock = false

-- `now` as a call gives it (µs since the epoch), or Redis's clock when it gives 0.
local function time_now(arg)
  local now = tonumber(arg)
  given_clock = now ~= 0
  if now == 0 then
    local time = redis.call('TIME')
    now = tonumber(time[1]) * 1000000 + tonumber(time[2])
  end
  return now
end

-- Removes the members `permit`:1 .. `permit`:`count` of a sorted set (a request's concurrency
-- permits, or its sliding log stamps); returns how many there were.
local function remove_members(key, permit, count)
  local members = {}
  local removed = 0
  for i = 1, count do -- in batches: unpack() takes a few thousand values at most
    members[#members + 1] = permit .. ':' .. i
    if #members >= 1000 or i == count then
      removed = removed + redis.call('ZREM', key, unpack(members))
      members = {}
    end
  end
  return removed
end

-- Keeps a key until its state is fresh again (at `fresh_at`), so Redis forgets idle keys itself.
local function expire_at(key, fresh_at, now)
  if fresh_at == NEVER or given_clock then
    return
  end
  redis.call('PEXPIRE', key, whole(math.max(1, math.ceil((fresh_at - now) / 1000))))
end
