-- wrk: each request from one of 1000 clients in turn, named in the X-Client header
-- (bench/shared.sh keys its per-client limiter by it).
local sent = 0

request = function()
  sent = sent + 1
  return wrk.format(nil, nil, {["X-Client"] = "client-" .. (sent % 1000)})
end
