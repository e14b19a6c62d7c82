-- notes: a small note-taking plugin, and the example of a folder plugin.
--
-- A folder with an init.lua is one plugin; require() finds modules inside that folder, so
-- require("store") loads notes/store.lua. The plugin shows the three kinds of thing a plugin can
-- register:
--   tools      notes_add, notes_list, notes_get, notes_update, notes_delete
--   resources  note://index (a fixed URI) and note://{id} (a template), both Markdown
-- Notes are kept in memory (see store.lua): they last until the hub stops or the plugin reloads.

local store = require("store").new()

local MARKDOWN = "text/markdown"

-- A note id may arrive as a string ("3") or, from a less careful client, as an integer (3).
local ID_SCHEMA = {
  type = { "string", "integer" },
  description = "The note's id, as returned by notes_add or notes_list",
}

local TAGS_SCHEMA = {
  type = "array",
  items = { type = "string", minLength = 1, maxLength = 64 },
  maxItems = 32,
  description = "Labels for grouping and filtering notes",
}

-- Tool handlers report an expected failure (an unknown id) by raising it: the caller receives a
-- tool result with isError = true and this text. Level 0 leaves out the "file:line:" prefix.
local function must(value, err)
  if value == nil then
    error(err, 0)
  end
  return value
end

-- What notes_list shows of a note: everything but the body.
local function summary(note)
  return { id = note.id, title = note.title, tags = note.tags, uri = "note://" .. note.id }
end

local function render(note)
  local lines = { "# " .. note.title, "" }
  if #note.tags > 0 then
    lines[#lines + 1] = "Tags: " .. table.concat(note.tags, ", ")
    lines[#lines + 1] = ""
  end
  lines[#lines + 1] = note.body
  return table.concat(lines, "\n")
end

-- Tools ---------------------------------------------------------------------------------------

mcp.tool("notes_add", {
  title = "Add a note",
  description = "Create a note and return it with its new id.",
  input_schema = {
    type = "object",
    properties = {
      title = { type = "string", minLength = 1, maxLength = 200, description = "One-line title" },
      body = { type = "string", maxLength = 100000, description = "The note's text (Markdown)" },
      tags = TAGS_SCHEMA,
    },
    required = { "title" },
    additionalProperties = false,
  },
}, function(params)
  local note = must(store:add(params.title, params.body, params.tags))
  log.info("note added", { id = note.id })
  return note
end)

mcp.tool("notes_list", {
  title = "List notes",
  description = "List notes, oldest first, without their bodies. Filter by tag and/or by text in the title or body.",
  input_schema = {
    type = "object",
    properties = {
      tag = { type = "string", maxLength = 64, description = "Only notes carrying this tag" },
      query = {
        type = "string",
        maxLength = 200,
        description = "Only notes whose title or body contains this text (case-insensitive)",
      },
    },
    additionalProperties = false,
  },
  annotations = { readOnlyHint = true },
}, function(params)
  -- json.array(): an empty result must still be a JSON array, not an empty object.
  local notes = json.array()
  for _, note in ipairs(store:list({ tag = params.tag, query = params.query })) do
    notes[#notes + 1] = summary(note)
  end
  return { count = #notes, notes = notes }
end)

mcp.tool("notes_get", {
  title = "Get a note",
  description = "Return one note, body included.",
  input_schema = {
    type = "object",
    properties = { id = ID_SCHEMA },
    required = { "id" },
    additionalProperties = false,
  },
  annotations = { readOnlyHint = true },
}, function(params)
  return must(store:get(params.id))
end)

mcp.tool("notes_update", {
  title = "Update a note",
  description = "Change a note's title, body or tags; fields left out stay as they are.",
  input_schema = {
    type = "object",
    properties = {
      id = ID_SCHEMA,
      title = { type = "string", minLength = 1, maxLength = 200 },
      body = { type = "string", maxLength = 100000 },
      tags = TAGS_SCHEMA,
    },
    required = { "id" },
    additionalProperties = false,
  },
  annotations = { idempotentHint = true },
}, function(params)
  return must(store:update(params.id, params))
end)

mcp.tool("notes_delete", {
  title = "Delete a note",
  description = "Delete a note for good and return what it held.",
  input_schema = {
    type = "object",
    properties = { id = ID_SCHEMA },
    required = { "id" },
    additionalProperties = false,
  },
  annotations = { destructiveHint = true },
}, function(params)
  local note = must(store:delete(params.id))
  log.info("note deleted", { id = note.id })
  return { deleted = true, note = note }
end)

-- Resources -----------------------------------------------------------------------------------

-- A fixed URI: listed by resources/list.
mcp.resource("note://index", {
  name = "Notes index",
  description = "Every note's title, with a link to read it",
  mime_type = MARKDOWN,
}, function()
  local notes = store:list()
  if #notes == 0 then
    return "# Notes\n\nNo notes yet. Add one with the notes_add tool.\n"
  end
  local lines = { "# Notes", "" }
  for _, note in ipairs(notes) do
    local tags = #note.tags > 0 and (" (" .. table.concat(note.tags, ", ") .. ")") or ""
    lines[#lines + 1] = string.format("- [%s](note://%s)%s", note.title, note.id, tags)
  end
  return table.concat(lines, "\n") .. "\n"
end)

-- A template: listed by resources/templates/list; params.id is the {id} part of the URI read.
-- Reading an unknown id raises, which the client receives as an error for that read.
mcp.resource("note://{id}", {
  name = "Note",
  description = "One note as Markdown",
  mime_type = MARKDOWN,
}, function(params)
  local note = must(store:get(params.id))
  return { text = render(note), mime_type = MARKDOWN }
end)
