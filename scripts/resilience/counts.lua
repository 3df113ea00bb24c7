-- wrk script for scripts/resilience.sh: counts the answers by status and prints, at the end,
-- lines the shell reads (wrk's own report stays above them):
--   result requests=N p50_us=.. p99_us=.. max_us=.. connect=.. read=.. write=.. timeout=.. non2xx=..
--   status CODE COUNT          (one line per status seen)
-- Optional environment: WRK_METHOD (GET), WRK_BODY_BYTES (a body of that many bytes, e.g. for
-- an upload), WRK_HEADER ("Name: value", one extra header).
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

local method = os.getenv("WRK_METHOD")
if method then wrk.method = method end
local body_bytes = tonumber(os.getenv("WRK_BODY_BYTES") or "0")
if body_bytes > 0 then
  wrk.body = string.rep("x", body_bytes)
  wrk.headers["Content-Type"] = "application/octet-stream"
end
local extra = os.getenv("WRK_HEADER")
if extra then
  local name, value = extra:match("^([^:]+):%s*(.*)$")
  wrk.headers[name] = value
end

function init(args)
  statuses = {}  -- global, so that done() can read it with thread:get
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, thread in ipairs(threads) do
    for code, count in pairs(thread:get("statuses") or {}) do
      total[code] = (total[code] or 0) + count
    end
  end
  local e = summary.errors
  io.write(string.format(
    "result requests=%d p50_us=%d p99_us=%d max_us=%d connect=%d read=%d write=%d timeout=%d non2xx=%d\n",
    summary.requests, latency:percentile(50), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.timeout, e.status))
  for code, count in pairs(total) do
    io.write(string.format("status %d %d\n", code, count))
  end
end
