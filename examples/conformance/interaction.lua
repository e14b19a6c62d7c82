-- Conformance fixtures: handlers that talk back to their caller while they run (logging,
-- progress, sampling, elicitation), in both protocol eras. In 2026-07-28 the questions travel
-- as input_required results and the handler runs again with the answers (see docs/lua-api.md).

mcp.tool("test_tool_with_logging", {
  description = "Tests tool that emits log messages during execution",
}, function(_, context)
  context.log("info", "Tool execution started")
  task.sleep(50)
  context.log("info", "Tool processing data")
  task.sleep(50)
  context.log("info", "Tool execution completed")
  return "Tool with logging executed successfully"
end)

mcp.tool("test_tool_with_progress", {
  description = "Tests tool that reports progress notifications",
}, function(_, context)
  for step = 0, 100, 50 do
    context.progress(step, 100, string.format("Completed step %d of 100", step))
    if step < 100 then task.sleep(50) end
  end
  return "Progress reported"
end)

mcp.tool("test_sampling", {
  description = "Tests server-initiated sampling (LLM completion request)",
  input_schema = {
    type = "object",
    properties = { prompt = { type = "string", description = "The prompt to send to the LLM" } },
    required = { "prompt" },
  },
}, function(params, context)
  local answer = context.sample({ prompt = params.prompt, max_tokens = 100 })
  local text = answer.content and answer.content.text or "No response"
  return "LLM response: " .. text
end)

local function elicitation_tool(name, description, message, schema, input_schema)
  mcp.tool(name, { description = description, input_schema = input_schema }, function(params, context)
    local answer = context.elicit({ message = params.message or message, requested_schema = schema })
    return string.format(
      "Elicitation completed: action=%s, content=%s",
      answer.action,
      json.encode(answer.content or json.null)
    )
  end)
end

elicitation_tool(
  "test_elicitation",
  "Tests server-initiated elicitation (user input request)",
  nil,
  {
    type = "object",
    properties = { username = { type = "string", description = "User's response" } },
    required = { "username" },
  },
  {
    type = "object",
    properties = { message = { type = "string", description = "The message to show the user" } },
    required = { "message" },
  }
)

elicitation_tool(
  "test_elicitation_sep1034_defaults",
  "Tests elicitation with default values per SEP-1034",
  "Please review and update the form fields with defaults",
  {
    type = "object",
    properties = {
      name = { type = "string", description = "User name", default = "John Doe" },
      age = { type = "integer", description = "User age", default = 30 },
      score = { type = "number", description = "User score", default = 95.5 },
      status = {
        type = "string",
        description = "User status",
        enum = { "active", "inactive", "pending" },
        default = "active",
      },
      verified = { type = "boolean", description = "Verification status", default = true },
    },
    required = {},
  }
)

elicitation_tool(
  "test_elicitation_sep1330_enums",
  "Tests elicitation with enum schema improvements per SEP-1330",
  "Please select options from the enum fields",
  {
    type = "object",
    properties = {
      untitledSingle = {
        type = "string",
        description = "Select one option",
        enum = { "option1", "option2", "option3" },
      },
      titledSingle = {
        type = "string",
        description = "Select one option with titles",
        oneOf = {
          { const = "value1", title = "First Option" },
          { const = "value2", title = "Second Option" },
          { const = "value3", title = "Third Option" },
        },
      },
      legacyEnum = {
        type = "string",
        description = "Select one option (legacy)",
        enum = { "opt1", "opt2", "opt3" },
        enumNames = { "Option One", "Option Two", "Option Three" },
      },
      untitledMulti = {
        type = "array",
        description = "Select multiple options",
        minItems = 1,
        maxItems = 3,
        items = { type = "string", enum = { "option1", "option2", "option3" } },
      },
      titledMulti = {
        type = "array",
        description = "Select multiple options with titles",
        minItems = 1,
        maxItems = 3,
        items = {
          anyOf = {
            { const = "value1", title = "First Choice" },
            { const = "value2", title = "Second Choice" },
            { const = "value3", title = "Third Choice" },
          },
        },
      },
    },
    required = {},
  }
)

-- Questions with names of their own: the client answers under these keys (2026-07-28).

local function ask_name(context, key, message)
  local answer = context.elicit({
    key = key,
    message = message,
    requested_schema = {
      type = "object",
      properties = { name = { type = "string" } },
      required = { "name" },
    },
  })
  return answer.content and answer.content.name or "unknown"
end

mcp.tool("test_input_required_result_elicitation", {
  description = "Asks the caller's name, then greets them",
}, function(_, context)
  return "Hello, " .. ask_name(context, "user_name", "What is your name?") .. "!"
end)

mcp.tool("test_input_required_result_sampling", {
  description = "Asks the client's model a question",
}, function(_, context)
  local answer = context.sample({
    key = "capital_question",
    prompt = "What is the capital of France?",
    max_tokens = 100,
  })
  return "Sampling result: " .. (answer.content and answer.content.text or "no response")
end)

mcp.tool("test_input_required_result_list_roots", {
  description = "Lists the client's roots",
}, function(_, context)
  local answer = context.list_roots({ key = "client_roots" })
  return string.format("Found %d root(s)", #(answer.roots or {}))
end)

local confirm_schema = {
  type = "object",
  properties = { ok = { type = "boolean" } },
  required = { "ok" },
}

mcp.tool("test_input_required_result_request_state", {
  description = "Asks for a confirmation; the hub carries the state between rounds",
}, function(_, context)
  local answer = context.elicit({ key = "confirm", message = "Please confirm", requested_schema = confirm_schema })
  return "state-ok: confirmed=" .. tostring(answer.content and answer.content.ok)
end)

mcp.tool("test_input_required_result_tampered_state", {
  description = "Asks for a confirmation; a tampered request state is refused by the hub",
}, function(_, context)
  context.elicit({ key = "confirm", message = "Please confirm", requested_schema = confirm_schema })
  return "integrity-ok: state verified"
end)

mcp.tool("test_input_required_result_multiple_inputs", {
  description = "Asks three questions at once",
}, function(_, context)
  local answers = context.input({
    user_name = {
      method = "elicitation/create",
      params = {
        message = "What is your name?",
        requestedSchema = {
          type = "object",
          properties = { name = { type = "string" } },
          required = { "name" },
        },
      },
    },
    greeting = {
      method = "sampling/createMessage",
      params = {
        messages = { { role = "user", content = { type = "text", text = "Generate a greeting" } } },
        maxTokens = 50,
      },
    },
    client_roots = { method = "roots/list" },
  })
  return string.format(
    "Name: %s; Greeting: %s; Roots: %d",
    answers.user_name.content.name,
    answers.greeting.content.text,
    #(answers.client_roots.roots or {})
  )
end)

mcp.tool("test_input_required_result_multi_round", {
  description = "Asks two questions, one after the other",
}, function(_, context)
  local name = ask_name(context, "step1", "Step 1: What is your name?")
  local color = context.elicit({
    key = "step2",
    message = "Step 2: What is your favorite color?",
    requested_schema = {
      type = "object",
      properties = { color = { type = "string" } },
      required = { "color" },
    },
  })
  return string.format("Multi-round complete for %s who likes %s", name, color.content.color)
end)

mcp.tool("test_input_required_result_capabilities", {
  description = "Asks only what the client declared it can answer",
}, function(_, context)
  local caps = context.client_capabilities
  local requests = {}
  if caps.elicitation then
    requests.elicit_input = {
      method = "elicitation/create",
      params = {
        message = "Elicitation input",
        requestedSchema = {
          type = "object",
          properties = { value = { type = "string" } },
          required = { "value" },
        },
      },
    }
  end
  if caps.sampling then
    requests.sample_input = {
      method = "sampling/createMessage",
      params = {
        messages = { { role = "user", content = { type = "text", text = "Sample request" } } },
        maxTokens = 50,
      },
    }
  end
  if next(requests) == nil then return "No supported capabilities declared" end
  local answers = context.input(requests)
  local keys = {}
  for k in pairs(answers) do keys[#keys + 1] = k end
  table.sort(keys)
  return "capabilities-ok: received " .. table.concat(keys, ",")
end)

mcp.prompt("test_input_required_result_prompt", {
  description = "A prompt that asks the user for context first",
}, function(_, context)
  local answer = context.elicit({
    key = "user_context",
    message = "What context should the prompt use?",
    requested_schema = {
      type = "object",
      properties = { context = { type = "string" } },
      required = { "context" },
    },
  })
  return "Prompt with context: " .. answer.content.context
end)
