-- prompts: reusable prompt templates that a client offers its user (MCP prompts/list, prompts/get).
--
-- Prompt arguments always arrive as strings (or are absent when optional and not given). A handler
-- returns either { description = ..., messages = { {role, content}, ... } } or a plain string,
-- which becomes one user message.

-- Arguments come from clients: trim in linear time. `s:gsub("%s+$", "")` retries the match at
-- every space of a long run and takes seconds on a 40,000-space argument; this walks back from
-- the end one byte at a time instead (an anchored find only looks at that one byte).
local function trim(s)
  local first = s:find("%S")
  if first == nil then
    return ""
  end
  local last = #s
  while last > first and s:find("^%s", last) do
    last = last - 1
  end
  return s:sub(first, last)
end

mcp.prompt("code-review", {
  title = "Code review",
  description = "Review code in a given language, optionally focusing on one concern",
  arguments = {
    { name = "language", description = "Programming language of the code, e.g. TypeScript", required = true },
    { name = "focus", description = "What to look at hardest, e.g. security, performance, naming", required = false },
    { name = "code", description = "The code to review; leave empty to paste it in the chat", required = false },
  },
}, function(args)
  local language = trim(args.language)
  local focus = args.focus and trim(args.focus) or ""

  local lines = {
    string.format("You are a careful senior %s reviewer.", language),
    "Review the code below. For each problem give the line, what is wrong, why it matters, and a fix.",
    "List correctness problems first, then maintainability; say so plainly if the code is fine.",
  }
  if focus ~= "" then
    lines[#lines + 1] = string.format("Pay particular attention to %s.", focus)
  end

  local messages = {
    { role = "user", content = { type = "text", text = table.concat(lines, "\n") } },
  }
  if args.code and args.code ~= "" then
    local fence = string.lower(language):gsub("[^%w+#-]", "")
    messages[#messages + 1] = {
      role = "user",
      content = { type = "text", text = "```" .. fence .. "\n" .. args.code .. "\n```" },
    }
  end

  return {
    description = focus ~= "" and string.format("%s code review (focus: %s)", language, focus)
      or string.format("%s code review", language),
    messages = messages,
  }
end)

mcp.prompt("summarize", {
  title = "Summarize",
  description = "Summarize a text as bullet points or a short paragraph",
  arguments = {
    { name = "text", description = "The text to summarize", required = true },
    { name = "style", description = "bullets (default) or paragraph", required = false },
    { name = "max_words", description = "Upper bound on the summary's length in words (default 120)", required = false },
  },
}, function(args)
  local style = args.style == "paragraph" and "one short paragraph" or "a few bullet points"
  local max_words = math.tointeger(tonumber(args.max_words))
  if max_words == nil or max_words < 1 then
    max_words = 120
  end
  -- A string result becomes a single user message.
  return string.format(
    "Summarize the following text as %s, in at most %d words. Keep names, numbers and decisions; "
      .. "drop repetition.\n\n%s",
    style, max_words, args.text
  )
end)

mcp.prompt("explain-error", {
  title = "Explain an error",
  description = "Explain an error message or stack trace and suggest the next step",
  arguments = {
    { name = "error", description = "The error message or stack trace", required = true },
    { name = "context", description = "What you were doing when it happened", required = false },
  },
}, function(args)
  local text = "Explain this error in plain words: what it means, the most likely cause, and the "
    .. "first thing to check.\n\n" .. args.error
  if args.context and args.context ~= "" then
    text = text .. "\n\nWhat I was doing: " .. args.context
  end
  return text
end)
