-- Gives back the concurrency permits of a finished request.
-- keys[1]: the limiter's key. args: the request's permit id, its cost.
local function release(keys, args)
  return remove_members(keys[1], args[1], tonumber(args[2]))
end
