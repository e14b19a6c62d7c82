-- clock: the current time as structured data, and an asynchronous wait.
--
-- clock_now returns a table, which the client receives both as JSON text and as
-- structuredContent (checked against the declared output_schema). clock_wait shows task.sleep:
-- it suspends only this call; the hub and other calls keep running meanwhile.

local MAX_WAIT_MS = 60000

local function offset_string(minutes)
  local sign = minutes < 0 and "-" or "+"
  minutes = math.abs(minutes)
  return string.format("%s%02d:%02d", sign, minutes // 60, minutes % 60)
end

mcp.tool("clock_now", {
  title = "Current time",
  description = "The current date and time: Unix seconds, ISO 8601, and its parts, in UTC or at a given UTC offset.",
  input_schema = {
    type = "object",
    properties = {
      utc_offset_minutes = {
        type = "integer",
        minimum = -720,
        maximum = 840,
        description = "Offset from UTC in minutes, e.g. 60 for UTC+01:00 (default 0)",
      },
    },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      unix = { type = "integer" },
      iso = { type = "string" },
      utc_offset = { type = "string" },
      year = { type = "integer" },
      month = { type = "integer" },
      day = { type = "integer" },
      hour = { type = "integer" },
      minute = { type = "integer" },
      second = { type = "integer" },
      weekday = { type = "string" },
      day_of_year = { type = "integer" },
    },
    required = { "unix", "iso", "utc_offset" },
  },
  annotations = { readOnlyHint = true, openWorldHint = false },
}, function(params)
  local offset = params.utc_offset_minutes or 0
  local now = os.time()
  local shifted = now + offset * 60
  -- "!" formats in UTC; shifting the time first gives the wall clock at that offset.
  local t = os.date("!*t", shifted)
  local suffix = offset == 0 and "Z" or offset_string(offset)
  return {
    unix = now,
    iso = os.date("!%Y-%m-%dT%H:%M:%S", shifted) .. suffix,
    utc_offset = offset_string(offset),
    year = t.year,
    month = t.month,
    day = t.day,
    hour = t.hour,
    minute = t.min,
    second = t.sec,
    weekday = os.date("!%A", shifted),
    day_of_year = t.yday,
  }
end)

mcp.tool("clock_wait", {
  title = "Wait",
  description = "Wait the given number of milliseconds, then answer. Useful to pace polling.",
  input_schema = {
    type = "object",
    properties = {
      ms = { type = "integer", minimum = 0, maximum = MAX_WAIT_MS, description = "How long to wait" },
    },
    required = { "ms" },
    additionalProperties = false,
  },
  -- The default per-call limit is 5000 ms; this tool may legitimately wait up to a minute.
  timeout_ms = MAX_WAIT_MS + 5000,
  annotations = { readOnlyHint = true, idempotentHint = true },
}, function(params)
  task.sleep(params.ms) -- yields this call's coroutine; nothing else is blocked
  return string.format("waited %d ms", params.ms)
end)
