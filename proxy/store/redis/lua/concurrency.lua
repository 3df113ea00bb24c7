-- concurrency: in-flight requests per key, as a sorted set of permits scored by when their
-- lease ends, so that the permits of a replica that died expire on their own. The proxy gives
-- each request's permits back (release.lua) when its response is over.
-- Parameters: limit, lease (µs). commit() takes the request's permit id (unique per request).
local function make_concurrency()
  local concurrency = {}

  function concurrency.load(key, p, now)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    return {key = key, in_flight = redis.call('ZCARD', key)}
  end

  function concurrency.evaluate(s, now, cost, p, policy)
    local limit = p[1]
    if s.in_flight + cost <= limit then
      return 1, 0, 0
    end
    if cost > limit then
      return 0, 0, -1
    end
    return 0, 0, 1000000 -- when a permit comes back is not known: a one-second hint
  end

  function concurrency.commit(key, s, now, cost, hold, p, permit)
    local lease_end = now + p[2]
    local args = {}
    for i = 1, cost do -- in batches: unpack() takes a few thousand values at most
      args[#args + 1] = lease_end
      args[#args + 1] = permit .. ':' .. i
      if #args >= 1000 or i == cost then
        redis.call('ZADD', key, unpack(args))
        args = {}
      end
    end
    s.in_flight = s.in_flight + cost
    expire_at(key, now + p[2], now)
  end

  function concurrency.refund(key, s, decided_at, now, cost, hold, p, permit)
    s.in_flight = s.in_flight - remove_members(key, permit, cost)
    return false
  end

  function concurrency.status(s, now, p)
    return p[1] - math.min(s.in_flight, p[1]), 0
  end
  return concurrency
end
