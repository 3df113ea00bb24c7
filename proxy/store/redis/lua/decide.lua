-- The decisions of many requests, in one call: each request's limiters are decided atomically,
-- the live ones all or nothing, then the shadow ones, all or nothing, only if the live ones
-- admitted it. Requests are decided in the order given; one that fails (a key of the wrong type)
-- fails alone.
--
-- keys: every request's state keys, one per limiter, live ones first, request after request.
-- args: now (µs since the epoch; 0 = Redis's TIME, so replicas with skewed clocks agree), the
--       number of requests, the number of limiter definitions, then per definition 7 values:
--       algorithm, delay (0/1), max_delay (µs), 4 parameters; then per request: its number of
--       limiters, of live limiters, its permit id (concurrency), then per limiter: its
--       definition (1-based) and cost. A negative cost is a charge settled after the response
--       that reserves nothing: admitted if the cost fits, none of it committed.
--       A settlement (SPEC §9: what a finished request's response said it cost) is a request
--       whose live count is -1: its number of limiters, -1, the permit id of the request it
--       settles, that request's decided_at, then per limiter: its definition and amount, charged
--       whether it fits or not when positive, given back as of decided_at when negative.
-- Returns the time decided at (µs, for refunds), then per request: 1 (decided) or 0 (failed),
--       then per limiter: admitted (0/1), hold, retry_after (-1 = never), remaining, reset (µs);
--       shadow limiters of a refused request are not evaluated (all zeros); a settlement's are
--       admitted with its status after. After them, if a request failed, the first failure's
--       message.
--
-- A key met again in the same call is not read again: its state, as the requests before left
-- it, is kept for the call (every algorithm's commit updates the state it wrote). Algorithms whose
-- state is one value or hash (those with a save()) commit to that state only, and each key they
-- changed is written once, at the end of the call: the call is atomic, so nobody can tell.
--
-- Loaded as a function library, the algorithms are built once per Redis; as a script (Redis
-- before 7), once per call, each only when a call uses it: most calls need one or two of eight.
local makers = {
  make_fixed_window, make_sliding_log, make_sliding_window, make_wheel,
  make_token_bucket, make_warming_bucket, make_leaky_bucket, make_concurrency,
}
local built = {}
local DEFINITION = 7 -- values per definition
local VALUES = 5 -- reply values per limiter

local function algorithm_of(code)
  local algorithm = built[code]
  if not algorithm then
    if not makers[code] then
      error('sluice: unknown algorithm ' .. tostring(code), 0)
    end
    algorithm = makers[code]()
    built[code] = algorithm
  end
  return algorithm
end

-- Definition i of a call, from args[at + 1 ..]: its algorithm, policy {delay, max_delay} and
-- parameters.
local function definition_at(args, at)
  return {
    algorithm = algorithm_of(tonumber(args[at + 1])),
    delay = args[at + 2] == '1',
    max_delay = tonumber(args[at + 3]),
    p = {tonumber(args[at + 4]), tonumber(args[at + 5]), tonumber(args[at + 6]),
         tonumber(args[at + 7])},
  }
end

-- Remembers that a charge changed its key's state, to save it at the end of the call.
local function mark_changed(changed, c)
  if c.definition.algorithm.save and not changed[c.key] then
    changed[c.key] = true
    changed[#changed + 1] = {key = c.key, state = c.state, definition = c.definition}
  end
end

local function state_of(c, now, states)
  local s = states[c.key]
  if not s then
    s = c.definition.algorithm.load(c.key, c.definition.p, now)
    states[c.key] = s
  end
  return s
end

-- Charges charges[first..last] all or nothing, writing their reply values from reply[at + 1];
-- returns whether they admitted the request.
local function charge(charges, first, last, now, permit, states, changed, reply, at)
  local admitted = true
  for i = first, last do
    local c = charges[i]
    local d = c.definition
    c.state = state_of(c, now, states)
    c.admitted, c.hold, c.retry = d.algorithm.evaluate(c.state, now, c.cost, d.p, d)
    if c.admitted == 0 then
      admitted = false
    end
  end
  for i = first, last do
    local c = charges[i]
    local d = c.definition
    if admitted and c.reserve > 0 then
      d.algorithm.commit(c.key, c.state, now, c.reserve, c.hold, d.p, permit)
      mark_changed(changed, c)
    end
    local remaining, reset = d.algorithm.status(c.state, now, d.p)
    local base = at + (i - 1) * VALUES
    reply[base + 1] = c.admitted
    reply[base + 2] = c.hold
    reply[base + 3] = c.retry
    reply[base + 4] = remaining
    reply[base + 5] = reset
  end
  return admitted
end

-- One request's limiters, charges[1..count], live ones first; raises the failure of a
-- definition it uses.
local function decide_request(charges, count, live, now, permit, states, changed, reply, at)
  for i = 1, count do
    if charges[i].definition.failure then
      error(charges[i].definition.failure, 0)
    end
  end
  if charge(charges, 1, live, now, permit, states, changed, reply, at) and live < count then
    charge(charges, live + 1, count, now, permit, states, changed, reply, at)
  end
end

-- Settles a finished request's charges[1..count] (see the arguments above): each on its own,
-- nothing to refuse. Charged amounts go into debt; a log keeps at most its limit of them.
-- Given-back amounts are given back as the memory limiters give them (erring towards admitting
-- less): the algorithms that cannot tell them apart there (a log, a warming bucket) keep them
-- here too, so that both stores, and replay, decide alike.
local function settle_request(charges, count, now, decided_at, permit, states, changed, reply,
                              at)
  for i = 1, count do
    if charges[i].definition.failure then
      error(charges[i].definition.failure, 0)
    end
  end
  for i = 1, count do
    local c = charges[i]
    local d = c.definition
    c.state = state_of(c, now, states)
    if c.cost > 0 then
      -- Named apart from the stamps the request's own commit logged under its permit.
      local charge = d.algorithm.charge or d.algorithm.commit
      charge(c.key, c.state, now, c.cost, 0, d.p, permit .. '+')
      mark_changed(changed, c)
    elseif not d.algorithm.keeps_refunds and
        d.algorithm.refund(c.key, c.state, decided_at, now, -c.cost, 0, d.p, permit) then
      mark_changed(changed, c)
    end
    local remaining, reset = d.algorithm.status(c.state, now, d.p)
    local base = at + (i - 1) * VALUES
    reply[base + 1] = 1
    reply[base + 2] = 0
    reply[base + 3] = 0
    reply[base + 4] = remaining
    reply[base + 5] = reset
  end
end

local function decide(keys, args)
  local now = time_now(args[1])
  local definitions = {}
  local arg_at = 4
  for i = 1, tonumber(args[3]) do
    local ok, definition = pcall(definition_at, args, arg_at - 1)
    definitions[i] = ok and definition or {failure = definition}
    arg_at = arg_at + DEFINITION
  end
  local states = {}
  local changed = {} -- charges whose key needs saving, by key and in order
  local charges = {} -- reused from request to request: one table per limiter of a request
  local reply = {}
  local failure
  local key_at, at = 1, 2
  reply[1] = now
  for _ = 1, tonumber(args[2]) do
    local count, live, permit = tonumber(args[arg_at]), tonumber(args[arg_at + 1]), args[arg_at + 2]
    local header = 3
    local decided_at
    if live < 0 then
      header = 4
      decided_at = tonumber(args[arg_at + 3])
    end
    for i = 1, count do
      local base = arg_at + header - 2 + 2 * i
      local c = charges[i]
      if not c then
        c = {}
        charges[i] = c
      end
      c.definition = definitions[tonumber(args[base])]
      c.key = keys[key_at + i - 1]
      c.cost = tonumber(args[base + 1])
      c.reserve = c.cost
      if c.cost < 0 and live >= 0 then
        c.cost, c.reserve = -c.cost, 0
      end
    end
    for i = at, at + count * VALUES do
      reply[i] = 0
    end
    local ok, why
    if live < 0 then
      ok, why = pcall(settle_request, charges, count, now, decided_at, permit, states, changed,
                      reply, at)
    else
      ok, why = pcall(decide_request, charges, count, live, now, permit, states, changed, reply,
                      at)
    end
    if ok then
      reply[at] = 1
    else
      for i = 1, count do
        local algorithm = charges[i].definition.algorithm
        if not (algorithm and algorithm.save) then
          states[charges[i].key] = nil -- a write may have failed after its state changed
        end
      end
      for i = at + 1, at + count * VALUES do
        reply[i] = 0
      end
      -- redis.call raises a table {err = message}; error() a string.
      failure = failure or (type(why) == 'table' and why.err) or tostring(why)
    end
    key_at = key_at + count
    arg_at = arg_at + header + 2 * count
    at = at + 1 + count * VALUES
  end
  for _, c in ipairs(changed) do
    c.definition.algorithm.save(c.key, c.state, now, c.definition.p)
  end
  if failure then
    reply[at] = failure
  end
  return reply
end

-- decide() on a Redis Cluster node: the keys come as arguments (args[1] of them, then the rest
-- of decide's args), since a call may not declare keys of several slots. The function is
-- registered with allow-cross-slot-keys; a key of a slot this node does not serve fails its
-- request alone ("non local key"), which tells the proxy to read the slot map again.
local function decide_in_cluster(_, args)
  local count = tonumber(args[1])
  local keys, rest = {}, {}
  for i = 1, count do
    keys[i] = args[i + 1]
  end
  for i = count + 2, #args do
    rest[#rest + 1] = args[i]
  end
  return decide(keys, rest)
end
