-- Gives back the concurrency permits of a finished request.
-- KEYS[1]: the limiter's key. ARGV: the request's permit id, its cost.
local members = {}
for i = 1, tonumber(ARGV[2]) do
  members[#members + 1] = ARGV[1] .. ':' .. i
end
return redis.call('ZREM', KEYS[1], unpack(members))
