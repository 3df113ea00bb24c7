-- wrk script for scripts/resilience.sh's key flood: every request carries an X-Client value
-- no other request carries, until KEYS values have been sent in all. Then each thread stops
-- (wrk's main thread still sleeps out its -d: the shell sends SIGINT once sluice counted them).
-- Requests go in pipelined batches of BATCH (every call of request() returns the same number,
-- as wrk requires), so the flood is quick. Counts answers as counts.lua does.
-- Environment: KEYS (total distinct keys), THREADS (wrk's -t, to split them), BATCH (16),
-- PREFIX (of the key values, "k": runs with different prefixes share no key).
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
dofile(here .. "counts.lua")

local keys = tonumber(os.getenv("KEYS") or "2000000")
local thread_count = tonumber(os.getenv("THREADS") or "1")
local batch = tonumber(os.getenv("BATCH") or "16")
local prefix = os.getenv("PREFIX") or "k"
local next_id = 0
-- wrk calls request() once in its main state, without init(), to check it: defaults for that.
quota, sent, answered = keys, 0, 0

local base_setup = setup
threads_seen = {}
function setup(thread)
  table.insert(threads_seen, thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  base_setup(thread)
end

local base_init = init
function init(args)
  base_init(args)
  quota = math.floor(keys / thread_count)
  if id == thread_count - 1 then quota = keys - quota * (thread_count - 1) end
  sent = 0  -- keys sent by this thread; read by the shell through done()
  answered = 0
end

function request()
  local parts = {}
  for i = 1, batch do
    -- Past the quota (the last batch), keys come round again: no new key, and no key is
    -- asked more than the limit allows, so that every answer of the flood is a 200.
    local n = sent % quota
    parts[i] = wrk.format(nil, "/flood", {["X-Client"] = string.format("%s%d-%d", prefix, id or 0, n)})
    sent = sent + 1
  end
  return table.concat(parts)
end

local base_response = response
function response(status, headers, body)
  base_response(status, headers, body)
  answered = answered + 1
  if answered >= quota and answered % batch == 0 then
    wrk.thread:stop()
  end
end

local base_done = done
function done(summary, latency, requests)
  base_done(summary, latency, requests)
  local distinct = 0
  for _, thread in ipairs(threads_seen) do
    distinct = distinct + math.min(thread:get("sent"), thread:get("quota"))
  end
  io.write(string.format("keys distinct=%d\n", distinct))
end
