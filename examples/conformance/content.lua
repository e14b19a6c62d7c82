-- Conformance fixtures: content of every kind in tool results, resources and prompts.
-- Served by `npm run conformance` (the MCP conformance suite calls these names).

-- A 1x1 red PNG and a minimal WAV file, base64-encoded.
local PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
local WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

-- Resource blobs are raw bytes: decode the base64 once.
local function from_base64(s)
  local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  local value = {}
  for i = 1, #alphabet do value[alphabet:sub(i, i)] = i - 1 end
  local out, bits, nbits = {}, 0, 0
  for c in s:gmatch("[^=]") do
    bits = (bits << 6) | value[c]
    nbits = nbits + 6
    if nbits >= 8 then
      nbits = nbits - 8
      out[#out + 1] = string.char((bits >> nbits) & 0xFF)
    end
  end
  return table.concat(out)
end
local PNG_BYTES = from_base64(PNG)

local no_args = { type = "object", properties = {} }

-- Tools ------------------------------------------------------------------------------------

mcp.tool("test_simple_text", {
  description = "Tests simple text content response",
  input_schema = no_args,
}, function()
  return "This is a simple text response for testing."
end)

mcp.tool("test_image_content", {
  description = "Tests image content response",
}, function()
  return { { type = "image", data = PNG, mime_type = "image/png" } }
end)

mcp.tool("test_audio_content", {
  description = "Tests audio content response",
}, function()
  return { { type = "audio", data = WAV, mime_type = "audio/wav" } }
end)

mcp.tool("test_embedded_resource", {
  description = "Tests embedded resource content response",
}, function()
  return { {
    type = "resource",
    resource = {
      uri = "test://embedded-resource",
      mimeType = "text/plain",
      text = "This is an embedded resource content.",
    },
  } }
end)

mcp.tool("test_multiple_content_types", {
  description = "Tests response with multiple content types (text, image, resource)",
}, function()
  return {
    { type = "text", text = "Multiple content types test:" },
    { type = "image", data = PNG, mime_type = "image/png" },
    {
      type = "resource",
      resource = {
        uri = "test://mixed-content-resource",
        mimeType = "application/json",
        text = json.encode({ test = "data", value = 123 }),
      },
    },
  }
end)

mcp.tool("test_resource_link", {
  title = "Resource link",
  description = "Returns a link to a resource instead of its content",
}, function()
  return { {
    type = "resource_link",
    uri = "test://static-text",
    name = "static-text",
    mimeType = "text/plain",
  } }
end)

mcp.tool("test_structured_output", {
  title = "Structured output",
  description = "Returns structured content that matches its output schema",
  output_schema = {
    type = "object",
    properties = { temperature = { type = "number" }, unit = { type = "string" } },
    required = { "temperature", "unit" },
  },
  icons = { { src = "data:image/png;base64," .. PNG, mimeType = "image/png" } },
}, function()
  return { temperature = 21.5, unit = "celsius" }
end)

mcp.tool("test_error_handling", {
  description = "Tests error response handling",
}, function()
  error("This tool intentionally returns an error for testing", 0)
end)

mcp.tool("json_schema_2020_12_tool", {
  description = "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
  input_schema = {
    ["$schema"] = "https://json-schema.org/draft/2020-12/schema",
    type = "object",
    ["$defs"] = {
      address = {
        ["$anchor"] = "addressDef",
        type = "object",
        properties = { street = { type = "string" }, city = { type = "string" } },
      },
    },
    properties = {
      name = { type = "string" },
      address = { ["$ref"] = "#/$defs/address" },
      contactMethod = { type = "string", enum = { "phone", "email" } },
      phone = { type = "string" },
      email = { type = "string" },
    },
    allOf = { { anyOf = { { required = { "phone" } }, { required = { "email" } } } } },
    ["if"] = {
      properties = { contactMethod = { const = "phone" } },
      required = { "contactMethod" },
    },
    ["then"] = { required = { "phone" } },
    ["else"] = { required = { "email" } },
    additionalProperties = false,
  },
}, function(params)
  return "JSON Schema 2020-12 tool called with: " .. json.encode(params)
end)

-- Resources ---------------------------------------------------------------------------------

mcp.resource("test://static-text", {
  name = "static-text",
  title = "Static Text Resource",
  description = "A static text resource for testing",
  mime_type = "text/plain",
}, function()
  return "This is the content of the static text resource."
end)

mcp.resource("test://static-binary", {
  name = "static-binary",
  title = "Static Binary Resource",
  description = "A static binary resource (image) for testing",
  mime_type = "image/png",
}, function()
  return { blob = PNG_BYTES, mime_type = "image/png" }
end)

mcp.resource("test://template/{id}/data", {
  name = "template",
  title = "Resource Template",
  description = "A resource template with parameter substitution",
  mime_type = "application/json",
  complete = {
    id = function(value)
      local out = {}
      for _, id in ipairs({ "1", "2", "42", "123" }) do
        if id:sub(1, #value) == value then out[#out + 1] = id end
      end
      return out
    end,
  },
}, function(params)
  return json.encode({ id = params.id, templateTest = true, data = "Data for ID: " .. params.id })
end)

mcp.resource("test://watched-resource", {
  name = "watched-resource",
  title = "Watched Resource",
  description = "A resource whose subscribers hear when it changes (touch_watched_resource)",
  mime_type = "text/plain",
}, function()
  return "Watched resource content"
end)

mcp.tool("touch_watched_resource", {
  description = "Tells subscribers of test://watched-resource that it changed",
}, function()
  mcp.resource_updated("test://watched-resource")
  return "notified"
end)

-- Prompts -----------------------------------------------------------------------------------

mcp.prompt("test_simple_prompt", {
  title = "Simple Test Prompt",
  description = "A simple prompt without arguments",
}, function()
  return "This is a simple prompt for testing."
end)

local function starting_with(words)
  return function(value)
    local out = {}
    for _, w in ipairs(words) do
      if w:sub(1, #value) == value then out[#out + 1] = w end
    end
    return out
  end
end

mcp.prompt("test_prompt_with_arguments", {
  title = "Prompt With Arguments",
  description = "A prompt with required arguments",
  arguments = {
    {
      name = "arg1",
      description = "First test argument",
      required = true,
      complete = starting_with({ "paris", "park", "party", "test", "testing" }),
    },
    { name = "arg2", description = "Second test argument", required = true },
  },
}, function(args)
  return string.format("Prompt with arguments: arg1='%s', arg2='%s'", args.arg1, args.arg2)
end)

mcp.prompt("test_prompt_with_embedded_resource", {
  title = "Prompt With Embedded Resource",
  description = "A prompt that includes an embedded resource",
  arguments = { { name = "resourceUri", description = "URI of the resource to embed", required = true } },
}, function(args)
  return {
    messages = {
      {
        role = "user",
        content = {
          type = "resource",
          resource = {
            uri = args.resourceUri,
            mimeType = "text/plain",
            text = "Embedded resource content for testing.",
          },
        },
      },
      { role = "user", content = { type = "text", text = "Please process the embedded resource above." } },
    },
  }
end)

mcp.prompt("test_prompt_with_image", {
  title = "Prompt With Image",
  description = "A prompt that includes image content",
}, function()
  return {
    messages = {
      { role = "user", content = { type = "image", data = PNG, mime_type = "image/png" } },
      { role = "user", content = { type = "text", text = "Please analyze the image above." } },
    },
  }
end)
