-- The decision for one request, over all of its limiters, in one round trip, atomically: the
-- live limiters consume all or nothing; then the shadow ones, all or nothing, only if the live
-- ones admitted the request. Every key of a call shares one hash tag (Redis Cluster).
--
-- KEYS: one state key per limiter, live ones first.
-- ARGV: now (µs since the epoch; 0 = Redis's TIME, so replicas with skewed clocks agree),
--       the number of live limiters, the request's permit id (concurrency), then per limiter
--       8 values: algorithm, cost, delay (0/1), max_delay (µs), 4 parameters.
-- Returns: now, then per limiter: admitted (0/1), hold, retry_after (-1 = never), remaining,
--          reset (µs). Shadow limiters of a refused request are not evaluated (all zeros).
--
-- A script's functions are created anew on every call, so each algorithm is built only when a
-- call uses it (make_*): most calls need one or two of the eight.
local makers = {
  make_fixed_window, make_sliding_log, make_sliding_window, make_wheel,
  make_token_bucket, make_warming_bucket, make_leaky_bucket, make_concurrency,
}
local built = {}
local FIELDS = 8

local now = tonumber(ARGV[1])
if now == 0 then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end
local live = tonumber(ARGV[2])
local permit = ARGV[3]

local charges = {}
for i = 1, #KEYS do
  local base = 3 + (i - 1) * FIELDS
  local code = tonumber(ARGV[base + 1])
  local algorithm = built[code]
  if not algorithm then
    if not makers[code] then
      return redis.error_reply('sluice: unknown algorithm ' .. tostring(ARGV[base + 1]))
    end
    algorithm = makers[code]()
    built[code] = algorithm
  end
  charges[i] = {
    algorithm = algorithm,
    key = KEYS[i],
    cost = tonumber(ARGV[base + 2]),
    delay = ARGV[base + 3] == '1', -- the charge is its own policy: {delay, max_delay}
    max_delay = tonumber(ARGV[base + 4]),
    p = {tonumber(ARGV[base + 5]), tonumber(ARGV[base + 6]), tonumber(ARGV[base + 7]),
         tonumber(ARGV[base + 8]), permit = permit},
  }
end

local reply = {now}

-- Charges charges[first..last] all or nothing; returns whether they admitted the request.
local function charge(first, last)
  local admitted = true
  for i = first, last do
    local c = charges[i]
    c.state = c.algorithm.load(c.key, c.p, now)
    c.admitted, c.hold, c.retry = c.algorithm.evaluate(c.state, now, c.cost, c.p, c)
    if c.admitted == 0 then
      admitted = false
    end
  end
  for i = first, last do
    local c = charges[i]
    if admitted then
      c.algorithm.commit(c.key, c.state, now, c.cost, c.hold, c.p)
    end
    local remaining, reset = c.algorithm.status(c.state, now, c.p)
    local base = 1 + (i - 1) * 5
    reply[base + 1] = c.admitted
    reply[base + 2] = c.hold
    reply[base + 3] = c.retry
    reply[base + 4] = remaining
    reply[base + 5] = reset
  end
  return admitted
end

for i = 2, 1 + #KEYS * 5 do
  reply[i] = 0
end
if charge(1, live) and live < #KEYS then
  charge(live + 1, #KEYS)
end
return reply
