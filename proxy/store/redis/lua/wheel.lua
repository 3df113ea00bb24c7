-- wheel: the window is `slots` epoch-aligned buckets of window/slots (seed 004). Hash
-- {bucket index = permits}, holding only the non-empty buckets of (head − slots, head].
-- Parameters: limit, window (µs), slots.
local function make_wheel()
  local wheel = {}

  function wheel.load(key)
    local fields = redis.call('HGETALL', key)
    local s = {counts = {}, head = nil}
    for i = 1, #fields, 2 do
      local bucket = tonumber(fields[i])
      s.counts[bucket] = tonumber(fields[i + 1])
      if not s.head or bucket > s.head then
        s.head = bucket
      end
    end
    return s
  end

  local function count_of(s, bucket, slots)
    if not s.head or bucket > s.head or bucket <= s.head - slots then
      return 0
    end
    return s.counts[bucket] or 0
  end

  -- Sum of the `slots` buckets that end at `bucket`.
  local function sum_ending_at(s, bucket, slots)
    local sum = 0
    if s.head and bucket - slots < s.head then
      for b = bucket - slots + 1, bucket do
        sum = sum + count_of(s, b, slots)
      end
    end
    return sum
  end

  function wheel.evaluate(s, now, cost, p, policy)
    local limit, slots = p[1], p[3]
    local length = p[2] / slots
    if cost > limit then
      return verdict_at(NEVER, now, policy)
    end
    -- Arrival order: never admit before a bucket that already holds reservations.
    local bucket = period_index(now, length)
    if s.head and s.head > bucket then
      bucket = s.head
    end
    local sum = sum_ending_at(s, bucket, slots)
    -- Each step lets the oldest bucket leave the window; after `slots` steps the sum is 0.
    while sum + cost > limit do
      sum = sum - count_of(s, bucket - slots + 1, slots)
      bucket = bucket + 1
    end
    return verdict_at(math.max(now, bucket * length), now, policy)
  end

  function wheel.commit(key, s, now, cost, hold, p)
    local slots = p[3]
    local length = p[2] / slots
    local bucket = period_index(now + hold, length)
    if not s.head or bucket > s.head then
      s.head = bucket
    end
    -- Buckets that left the window are dropped.
    local gone = {}
    for b in pairs(s.counts) do
      if b <= s.head - slots then
        gone[#gone + 1] = b
      end
    end
    for _, b in ipairs(gone) do
      s.counts[b] = nil
    end
    if #gone > 0 then
      redis.call('HDEL', key, unpack(gone))
    end
    s.counts[bucket] = (s.counts[bucket] or 0) + cost
    redis.call('HSET', key, whole(bucket), whole(s.counts[bucket]))
    expire_at(key, (s.head + slots) * length, now)
  end

  -- Takes back what commit() added to its bucket, if the bucket is still in the window. A commit
  -- into a later bucket (delay mode) dropped buckets the current window still counts: that
  -- bucket, if it is the head, stays (empty), so that the window still starts there.
  function wheel.refund(key, s, decided_at, now, cost, hold, p)
    local length = p[2] / p[3]
    local bucket = period_index(decided_at + hold, length)
    local count = s.counts[bucket]
    if not count then
      return false
    end
    local marks_head = bucket == s.head and bucket > period_index(now, length)
    if count <= cost and not marks_head then
      s.counts[bucket] = nil
      redis.call('HDEL', key, whole(bucket))
      s.head = nil
      for b in pairs(s.counts) do
        if not s.head or b > s.head then
          s.head = b
        end
      end
    elseif count <= cost then
      s.counts[bucket] = 0
      redis.call('HSET', key, whole(bucket), '0')
    else
      s.counts[bucket] = count - cost
      redis.call('HSET', key, whole(bucket), whole(count - cost))
    end
    return false -- written here: wheel has no save()
  end

  function wheel.status(s, now, p)
    local limit, slots = p[1], p[3]
    local length = p[2] / slots
    if not s.head then
      return limit, 0
    end
    local reset = math.max(0, (s.head + slots) * length - now)
    local current = period_index(now, length)
    if s.head > current then
      return 0, reset -- reservations are waiting: nothing left now
    end
    return limit - math.min(sum_ending_at(s, current, slots), limit), reset
  end
  return wheel
end
