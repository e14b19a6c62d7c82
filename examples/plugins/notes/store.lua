-- In-memory note storage for the notes plugin.
--
-- A module of the plugin's own folder: init.lua loads it with require("store"). It knows nothing
-- about MCP; it keeps notes in a Lua table and follows the Lua convention for expected failures
-- (return nil plus a message) so that the caller decides how to report them.
--
-- The notes live as long as the plugin's Lua state: a hub restart or a hot reload of the plugin
-- starts from an empty store.

local M = {}

-- Callers are untrusted: the store holds at most this many notes and bytes of text, so a client
-- adding in a loop gets a clear error instead of driving the plugin into its memory limit, and a
-- search (a plain find over every note) stays quick.
M.MAX_NOTES = 1000
M.MAX_TOTAL_BYTES = 4 * 1024 * 1024

local function size_of(title, body)
  return #title + #(body or "")
end

local Store = {}
Store.__index = Store

--- Creates an empty store.
function M.new()
  return setmetatable({ notes = {}, next_id = 1, count = 0, bytes = 0 }, Store)
end

-- Ids are decimal strings ("1", "2", ...) so that they read the same in a tool argument and in a
-- note://{id} URI. A number given by a caller is accepted and turned into its string.
local function normalize_id(id)
  if math.type(id) == "integer" then
    return tostring(id)
  end
  if type(id) == "string" and id:match("^%d+$") then
    return (id:gsub("^0+(%d)", "%1"))
  end
  return nil
end

local function copy_list(list)
  local out = json.array()
  for i, v in ipairs(list or {}) do
    out[i] = v
  end
  return out
end

--- Adds a note and returns it, or nil and a message when the store is full.
function Store:add(title, body, tags)
  if self.count >= M.MAX_NOTES then
    return nil, string.format("the store is full: at most %d notes (delete some first)", M.MAX_NOTES)
  end
  local size = size_of(title, body)
  if self.bytes + size > M.MAX_TOTAL_BYTES then
    return nil, string.format("the store is full: at most %d bytes of text in all", M.MAX_TOTAL_BYTES)
  end
  self.bytes = self.bytes + size
  local id = tostring(self.next_id)
  self.next_id = self.next_id + 1
  local note = { id = id, title = title, body = body or "", tags = copy_list(tags) }
  self.notes[id] = note
  self.count = self.count + 1
  return note
end

--- Returns the note with `id`, or nil and a message.
function Store:get(id)
  local key = normalize_id(id)
  local note = key and self.notes[key]
  if not note then
    return nil, string.format("no note with id %s", tostring(id))
  end
  return note
end

--- Changes the given fields of a note (nil leaves a field as it is); returns the note, or nil
--- and a message.
function Store:update(id, fields)
  local note, err = self:get(id)
  if not note then
    return nil, err
  end
  local new_size = size_of(fields.title or note.title, fields.body or note.body)
  local bytes = self.bytes - size_of(note.title, note.body) + new_size
  if bytes > M.MAX_TOTAL_BYTES then
    return nil, string.format("the store is full: at most %d bytes of text in all", M.MAX_TOTAL_BYTES)
  end
  self.bytes = bytes
  if fields.title ~= nil then note.title = fields.title end
  if fields.body ~= nil then note.body = fields.body end
  if fields.tags ~= nil then note.tags = copy_list(fields.tags) end
  return note
end

--- Removes a note; returns the removed note, or nil and a message.
function Store:delete(id)
  local note, err = self:get(id)
  if not note then
    return nil, err
  end
  self.notes[note.id] = nil
  self.count = self.count - 1
  self.bytes = self.bytes - size_of(note.title, note.body)
  return note
end

local function has_tag(note, tag)
  for _, t in ipairs(note.tags) do
    if t == tag then
      return true
    end
  end
  return false
end

-- Case-insensitive plain substring search; `plain = true` keeps Lua patterns out of user input.
local function contains(haystack, needle)
  return haystack:lower():find(needle:lower(), 1, true) ~= nil
end

--- Returns the notes (oldest first) that carry `filter.tag` and mention `filter.query` in their
--- title or body; both filters are optional.
function Store:list(filter)
  filter = filter or {}
  local out = {}
  for _, note in pairs(self.notes) do
    if (filter.tag == nil or has_tag(note, filter.tag))
      and (filter.query == nil or contains(note.title, filter.query) or contains(note.body, filter.query))
    then
      out[#out + 1] = note
    end
  end
  table.sort(out, function(a, b)
    return tonumber(a.id) < tonumber(b.id)
  end)
  return out
end

return M
