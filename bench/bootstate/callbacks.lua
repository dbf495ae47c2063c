-- wrk script for bench/bootstate: each request posts the next line of the
-- bodies file (one authenticated callback per registered system), threads
-- interleaved so no two requests reuse a body until all were sent.
-- Environment: BODIES (file), THREADS (wrk -t, default 2).
local counter = 0
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

function init(args)
  bodies = {}
  for line in io.lines(os.getenv("BODIES")) do
    bodies[#bodies + 1] = line
  end
  nthreads = tonumber(os.getenv("THREADS") or "2")
  sent = 0
end

function request()
  local i = (sent * nthreads + id) % #bodies + 1
  sent = sent + 1
  return wrk.format("POST", "/bootstate", { ["Content-Type"] = "application/json" }, bodies[i])
end
