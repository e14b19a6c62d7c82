-- Conformance fixtures for transport rules: required client capabilities, Mcp-Param headers,
-- per-request logging, and list changes seen by subscriptions/listen streams.

mcp.tool("test_missing_capability", {
  description = "Needs the client's sampling capability; refused before it runs without it",
  requires = { "sampling" },
}, function()
  return "Success"
end)

mcp.tool("test_streaming_elicitation", {
  description = "Reports progress on the request's own stream, then answers",
}, function(_, context)
  context.progress(50, 100, "half way")
  return "Streaming complete"
end)

mcp.tool("test_logging_tool", {
  description = "Logs only when the request asked for a log level",
}, function(_, context)
  context.log("info", "Diagnostic trace logging activated")
  return "Logging evaluated"
end)

mcp.tool("test_header_param", {
  description = "Echoes a region that also travels in the Mcp-Param-Region header",
  input_schema = {
    type = "object",
    properties = { region = { type = "string", ["x-mcp-header"] = "Region" } },
    required = { "region" },
  },
}, function(params)
  return "region: " .. params.region
end)

-- Each call adds or removes a tool (or prompt), so list_changed reaches open listen streams.
local dynamic_tool, dynamic_prompt = false, false

mcp.tool("test_trigger_tool_change", {
  description = "Adds or removes the tool test_dynamic_tool",
}, function()
  dynamic_tool = not dynamic_tool
  if dynamic_tool then
    mcp.tool("test_dynamic_tool", { description = "Appears and disappears" }, function()
      return "dynamic"
    end)
  else
    mcp.remove_tool("test_dynamic_tool")
  end
  return "Mutation triggered"
end)

mcp.tool("test_trigger_prompt_change", {
  description = "Adds or removes the prompt test_dynamic_prompt",
}, function()
  dynamic_prompt = not dynamic_prompt
  if dynamic_prompt then
    mcp.prompt("test_dynamic_prompt", { description = "Appears and disappears" }, function()
      return "dynamic"
    end)
  else
    mcp.remove_prompt("test_dynamic_prompt")
  end
  return "Mutation triggered"
end)

mcp.tool("test_reconnection", {
  description = "Lets go of the client's connection mid-call; the client reconnects for the answer",
}, function(_, context)
  context.poll_later(500)
  task.sleep(100)
  return "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."
end)
