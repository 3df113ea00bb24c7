-- Gives back the concurrency permits of a finished request.
-- keys[1]: the limiter's key. args: the request's permit id, its cost.
local function release(keys, args)
  local members = {}
  local removed = 0
  local cost = tonumber(args[2])
  for i = 1, cost do -- in batches: unpack() takes a few thousand values at most
    members[#members + 1] = args[1] .. ':' .. i
    if #members >= 1000 or i == cost then
      removed = removed + redis.call('ZREM', keys[1], unpack(members))
      members = {}
    end
  end
  return removed
end
