-- Takes back the charges of a request refused elsewhere. On a Redis Cluster a request whose
-- limiters live on several masters is charged on each (one decide call per master), and where
-- it was admitted while another master refused it, its charges there are refunded: the request
-- consumes from all of its limiters or, once refunded, from none. Each algorithm's refund takes
-- back what its commit added, never more; what it cannot know it keeps (a window that has
-- passed, permits that may have drained), so a refund errs towards admitting less.
-- Keys come as arguments, as decide_in_cluster takes them.
-- args: now (µs; 0 = Redis's clock), decided_at (the `now` the charges were decided at, on this
--       node's clock), the request's permit id, the number of charges N, their N keys, then per
--       charge the 7 values of its definition (as decide takes them), its cost and hold (µs).
-- Returns per charge its status once refunded: remaining, reset (µs), as decide replies them.
local function refund(_, args)
  local now = time_now(args[1])
  local decided_at = tonumber(args[2])
  local permit = args[3]
  local count = tonumber(args[4])
  local at = 5 + count
  local reply = {}
  for i = 1, count do
    local key = args[4 + i]
    local d = definition_at(args, at - 1)
    local cost, hold = tonumber(args[at + DEFINITION]), tonumber(args[at + DEFINITION + 1])
    local s = d.algorithm.load(key, d.p, now)
    if d.algorithm.refund(key, s, decided_at, now, cost, hold, d.p, permit) then
      d.algorithm.save(key, s, now, d.p)
    end
    local remaining, reset = d.algorithm.status(s, now, d.p)
    reply[#reply + 1] = remaining
    reply[#reply + 1] = reset
    at = at + DEFINITION + 2
  end
  return reply
end
