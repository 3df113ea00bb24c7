-- Gives back the concurrency permits of a finished request.
-- KEYS[1]: the limiter's key. ARGV: the request's permit id, its cost.
local members = {}
local removed = 0
local cost = tonumber(ARGV[2])
for i = 1, cost do -- in batches: unpack() takes a few thousand values at most
  members[#members + 1] = ARGV[1] .. ':' .. i
  if #members >= 1000 or i == cost then
    removed = removed + redis.call('ZREM', KEYS[1], unpack(members))
    members = {}
  end
end
return removed
