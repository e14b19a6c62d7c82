-- chilkat.JsonObject: load, paths with 0-based indexes and the i/j/k index variables, updates
-- that create their path, appends, members by position, emit.
local chilkat = require("chilkat")
local json = chilkat.JsonObject.new()
assert(json:load('{"tools":[{"name":"a","args":[1,2]},{"name":"b","args":[]}],"ok":true}'))

local names = {}
for i = 0, json:size_of_array("tools") - 1 do
  json.i = i
  names[#names + 1] = json:string_of("tools[i].name") .. "/" .. json:size_of_array("tools[i].args")
end

json:update_string("meta.owner.name", "moonhub")
json:update_int("meta.count", 2)
json:update_bool("meta.fresh", false)
json:update_null("meta.parent")
json:update_new_array("meta.tags")
json:append_string("note", "appended")
json:delete("ok")

local members = {}
for i = 0, json.size - 1 do
  members[#members + 1] = json:name_at(i) .. ":" .. json:type_at(i)
end

local bad_ok, bad_err = chilkat.JsonObject.new():load("{not json")
json.emit_compact = true
return {
  names = names,
  owner = json:string_of("meta.owner.name"),
  count = json:int_of("meta.count"),
  fresh = json:bool_of("meta.fresh"),
  not_array = json:size_of_array("meta.owner"),
  members = members,
  note = json:string_at(json.size - 1),
  emitted = json:emit(),
  bad = { ok = bad_ok, err = bad_err },
}
