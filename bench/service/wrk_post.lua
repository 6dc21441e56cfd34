-- wrk script: POSTs request bodies to attribution-service and reports status counts and latency
-- percentiles as one JSON line.
--   WRK_PATHS   comma-separated request paths (round-robin), e.g. /v2/sessions/ID/observations
--   WRK_BODIES  file listing body files, one per line (round-robin); empty = no body
--   WRK_CTYPE   Content-Type (default application/x-ndjson)
--   WRK_LABEL   name printed in the JSON line
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  paths = {}
  for p in string.gmatch(os.getenv("WRK_PATHS") or "/", "[^,]+") do table.insert(paths, p) end
  bodies = {}
  local list = os.getenv("WRK_BODIES")
  if list and list ~= "" then
    for name in io.lines(list) do
      local f = assert(io.open(name, "rb"))
      table.insert(bodies, f:read("*a"))
      f:close()
    end
  end
  ctype = os.getenv("WRK_CTYPE") or "application/x-ndjson"
  n = 0
  statuses = {}
end

function request()
  n = n + 1
  local path = paths[(n % #paths) + 1]
  local body = nil
  if #bodies > 0 then body = bodies[(n % #bodies) + 1] end
  return wrk.format("POST", path, {["Content-Type"] = ctype}, body)
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local counts = {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    for k, v in pairs(s) do counts[k] = (counts[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(counts) do table.insert(parts, string.format('"%d":%d', k, v)) end
  local secs = summary.duration / 1e6
  io.write(string.format(
    '{"label":"%s","requests":%d,"seconds":%.2f,"req_per_s":%.1f,"p50_ms":%.2f,"p99_ms":%.2f,"max_ms":%.2f,' ..
    '"socket_errors":%d,"timeouts":%d,"status":{%s}}\n',
    os.getenv("WRK_LABEL") or "wrk", summary.requests, secs, summary.requests / secs,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write, summary.errors.timeout,
    table.concat(parts, ",")))
end
