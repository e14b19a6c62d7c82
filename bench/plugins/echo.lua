-- The bench's Lua echo tool: the same contract as the bare server's and the SDK's echo.
mcp.tool("echo", {
  description = "Echo the text back",
  input_schema = {
    type = "object",
    properties = { text = { type = "string" } },
    required = { "text" },
  },
}, function(params)
  return params.text
end)
