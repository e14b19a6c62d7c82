/**
 * The LuaLS definitions in types/ against what a real state installs, both ways, and against
 * docs/lua-api.md: every installed function, field and class member has a definition, every
 * definition is installed, and the docs name exactly the functions the definitions define. A
 * failure names the missing name and the side it is missing from.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { LuaState } from '../../src/lua/state.js';
import { builtinModule, installApi } from '../../src/lua-api/index.js';
import { installNotice } from '../../src/lua-api/notice.js';
import { registryCaller } from '../../src/lua-api/tool-caller.js';
import { CHILKAT_LUA } from '../../src/lua-api/chilkat-lua.js';
import { PROPS } from '../../src/lua-api/chilkat-props.js';
import { silentLogger } from '../../src/log.js';
import { Registry } from '../../src/registry/registry.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const MOONHUB_DEFS = 'types/moonhub.lua';
const CHILKAT_DEFS = 'types/chilkat.lua';
const read = (rel: string) => readFileSync(resolve(ROOT, rel), 'utf8');

/** Lua 5.4's own globals (the sandbox's subset): LuaLS knows them already. */
const STANDARD = new Set(
  (
    '_G _VERSION assert collectgarbage error getmetatable ipairs load next pairs pcall print ' +
    'rawequal rawget rawlen rawset require select setmetatable tonumber tostring type warn ' +
    'xpcall coroutine debug math os package string table utf8'
  ).split(' '),
);

interface Defs {
  /** `name` for global functions, `table.name` for members (functions and values). */
  names: Set<string>;
  /** Class name -> its `---@field` names and `function Class:method` / `Class.fn` names. */
  classes: Map<string, Set<string>>;
}

function parseDefs(text: string, localClasses: Record<string, string> = {}): Defs {
  const names = new Set<string>();
  const classes = new Map<string, Set<string>>();
  let current: Set<string> | undefined;
  for (const line of text.split('\n')) {
    let m = /^---@class ([\w.]+)/.exec(line);
    if (m) {
      current = new Set();
      classes.set(m[1]!, current);
      continue;
    }
    m = /^---@field (\w+)/.exec(line);
    if (m && current) {
      current.add(m[1]!);
      continue;
    }
    if (!line.startsWith('---')) current = undefined;
    m = /^function (\w+)([.:])(\w+)\(/.exec(line);
    if (m) {
      const cls = localClasses[m[1]!];
      if (cls !== undefined) classes.get(cls)?.add(m[3]!);
      else names.add(`${m[1]}.${m[3]}`);
      continue;
    }
    m = /^function (\w+)\(/.exec(line);
    if (m) names.add(m[1]!);
    m = /^(\w+)\.(\w+) = /.exec(line);
    if (m) names.add(`${m[1]}.${m[2]}`);
    m = /^(\w+) = \{\}/.exec(line);
    if (m) names.add(m[1]!);
  }
  return { names, classes };
}

/** Lua code listing `_G` two levels deep: `name type` and `table.key type` lines. */
const LIST_GLOBALS = `
local out = {}
for k, v in pairs(_G) do
  if type(k) == "string" then
    out[#out + 1] = k .. " " .. type(v)
    if type(v) == "table" and k ~= "_G" then
      for k2, v2 in pairs(v) do
        if type(k2) == "string" then out[#out + 1] = k .. "." .. k2 .. " " .. type(v2) end
      end
    end
  end
end
local ch = require("chilkat")
for k, v in pairs(ch) do out[#out + 1] = "chilkat." .. k .. " " .. type(v) end
return table.concat(out, "\\n")
`;

function missing(from: Iterable<string>, inSet: Set<string>): string[] {
  return [...from].filter((x) => !inSet.has(x)).sort();
}

let state: LuaState;
let registry: Registry;
let installed: Map<string, string>;
const defs = parseDefs(read(MOONHUB_DEFS));
const chilkatDefs = parseDefs(read(CHILKAT_DEFS), {
  Mcp: 'chilkat.Mcp',
  JsonObject: 'chilkat.JsonObject',
  Socket: 'chilkat.Socket',
});

before(async () => {
  registry = new Registry({ hubId: 'defs' });
  state = await LuaState.create({
    name: 'defs',
    findModule: (name) => builtinModule(name) ?? `module '${name}' not found`,
  });
  installApi(state, { registry, owner: 'defs', logger: silentLogger, settings: {} });
  // What `moonhub run` adds to a plugin's API.
  installNotice(state, () =>
    registryCaller({ registry, ctx: { hub_id: 'defs' }, notice: () => undefined }),
  );
  const [text] = await state.call(state.load(LIST_GLOBALS, '=defs'), []);
  installed = new Map(
    String(text)
      .split('\n')
      .map((l) => l.split(' ') as [string, string]),
  );
});

after(() => state.close());

describe('LuaLS definitions against a real plugin state', () => {
  it('every moonhub global, function and value a state installs has a definition', () => {
    const ours = [...installed.keys()].filter((name) => {
      const top = name.split('.')[0]!;
      // Lua's own library, and the hub's private setup globals (removed or never documented).
      return !STANDARD.has(top) && !top.startsWith('_') && top !== 'chilkat';
    });
    const undefinedNames = missing(ours, defs.names);
    assert.deepEqual(
      undefinedNames,
      [],
      `installed in a plugin state but not defined in ${MOONHUB_DEFS}: ${undefinedNames.join(', ')}`,
    );
  });

  it('every definition is installed, with the kind it is defined as', () => {
    const notInstalled = missing(defs.names, new Set(installed.keys()));
    assert.deepEqual(
      notInstalled,
      [],
      `defined in ${MOONHUB_DEFS} but not installed in a plugin state: ${notInstalled.join(', ')}`,
    );
    for (const name of defs.names) {
      const fn = new RegExp(`^function ${name.replace('.', '\\.')}\\(`, 'm').test(
        read(MOONHUB_DEFS),
      );
      if (fn) assert.equal(installed.get(name), 'function', `${name} is defined as a function`);
    }
  });

  it('the context table: its fields and functions are defined, and each definition exists', async () => {
    const ctxFields = defs.classes.get('moonhub.Context')!;
    // Functions reached through the context's metatable, as context.ts lists them.
    const source = read('src/lua-api/context.ts');
    const fnNames = [
      ...(/local waiting = \{([^}]*)\}/.exec(source)?.[1] ?? '').matchAll(/(\w+) =/g),
      ...(/local immediate = \{([^}]*)\}/.exec(source)?.[1] ?? '').matchAll(/(\w+) =/g),
    ].map((m) => m[1]!);
    assert.ok(fnNames.length >= 7, 'context.ts lists its functions');
    await state.call(
      state.load(
        `mcp.tool("probe", {}, function(p, context)
           local out = {}
           for k in pairs(context) do out[#out + 1] = k end
           for _, k in ipairs(p.names) do
             if context[k] ~= nil then out[#out + 1] = k end
           end
           return table.concat(out, " ")
         end)`,
        '=probe',
      ),
      [],
    );
    const result = await registry.callTool(
      'probe',
      { names: [...ctxFields] },
      {
        hub_id: 'defs',
        session_uuid: 's',
        agent_name: 'a',
        target: 't',
        principal: 'session:s',
        plugin: 'p',
        request_id: 1,
        uri: 'x://y',
      },
    );
    const seen = String((result.content[0] as unknown as { text: string }).text).split(' ');
    const live = new Set([...seen, ...fnNames]);
    const undef = missing(live, ctxFields);
    assert.deepEqual(
      undef,
      [],
      `context members a handler gets but moonhub.Context in ${MOONHUB_DEFS} lacks: ${undef.join(', ')}`,
    );
    const absent = missing(ctxFields, live);
    assert.deepEqual(
      absent,
      [],
      `moonhub.Context fields in ${MOONHUB_DEFS} a handler's context does not have: ${absent.join(', ')}`,
    );
  });

  it('require("chilkat"): module members, class methods and properties, both ways', () => {
    const moduleInstalled = [...installed.keys()].filter((n) => n.startsWith('chilkat.'));
    const moduleDefined = new Set([
      ...[...chilkatDefs.names].map((n) => n.replace(/^chilkat\./, 'chilkat.')),
      // The module table's own keys, written as a table constructor in the definitions.
      ...[...read(CHILKAT_DEFS).matchAll(/^ {2}(\w+) = /gm)].map((m) => `chilkat.${m[1]}`),
    ]);
    assert.deepEqual(
      missing(moduleInstalled, moduleDefined),
      [],
      `chilkat module members not in ${CHILKAT_DEFS}`,
    );
    assert.deepEqual(
      missing(moduleDefined, new Set(moduleInstalled)),
      [],
      `chilkat members in ${CHILKAT_DEFS} not installed`,
    );
    const methodList = (v: string) =>
      [
        ...(new RegExp(`local ${v} = \\{([^}]*)\\}`).exec(CHILKAT_LUA)?.[1] ?? '').matchAll(
          /"(\w+)"/g,
        ),
      ].map((m) => m[1]!);
    const real: Record<string, string[]> = {
      'chilkat.Mcp': [
        'new',
        ...methodList('MCP_METHODS'),
        'set_event_handler',
        ...Object.keys(PROPS.Mcp),
      ],
      'chilkat.JsonObject': [
        'new',
        ...methodList('JSON_METHODS'),
        ...Object.keys(PROPS.JsonObject),
      ],
      'chilkat.Socket': ['new', ...methodList('SOCKET_METHODS'), ...Object.keys(PROPS.Socket)],
    };
    for (const [cls, members] of Object.entries(real)) {
      const defined = chilkatDefs.classes.get(cls) ?? new Set<string>();
      const undef = missing(members, defined);
      assert.deepEqual(
        undef,
        [],
        `${cls} members installed but not defined in ${CHILKAT_DEFS}: ${undef.join(', ')}`,
      );
      const extra = missing(defined, new Set(members));
      assert.deepEqual(
        extra,
        [],
        `${cls} members defined in ${CHILKAT_DEFS} but not installed: ${extra.join(', ')}`,
      );
    }
  });
});

/** Names of the API tables' functions that docs/lua-api.md mentions as calls or by name. */
function documentedNames(doc: string, tables: string[]): Set<string> {
  const t = tables.join('|');
  const out = new Set<string>();
  const fenced = doc.split(/^```.*$/m);
  fenced.forEach((part, i) => {
    if (i % 2 === 1) {
      // Inside a code block: only calls (`mcp.tool(`), not variables that shadow a table.
      for (const m of part.matchAll(new RegExp(`(?<![\\w.:])(${t})\\.(\\w+)\\(`, 'g')))
        out.add(`${m[1]}.${m[2]}`);
      return;
    }
    for (const span of part.matchAll(/`([^`\n]+)`/g)) {
      const m = new RegExp(`^(${t})\\.(\\w+)(\\(|$| ->)`).exec(span[1]!);
      if (m) out.add(`${m[1]}.${m[2]}`);
    }
  });
  return out;
}

describe('docs/lua-api.md and the definitions agree', () => {
  it('every documented function is defined, and every defined one is documented', () => {
    const tables = ['mcp', 'task', 'tools', 'vfs', 'log', 'json', 'secrets'];
    const doc = read('docs/lua-api.md');
    const documented = documentedNames(doc, tables);
    const defined = new Set(
      [...defs.names].filter((n) => n.includes('.') && tables.includes(n.split('.')[0]!)),
    );
    const undocumented = missing(defined, documented);
    assert.deepEqual(
      undocumented,
      [],
      `defined in ${MOONHUB_DEFS} but not documented in docs/lua-api.md: ${undocumented.join(', ')}`,
    );
    const undef = missing(documented, defined);
    assert.deepEqual(
      undef,
      [],
      `documented in docs/lua-api.md but not defined in ${MOONHUB_DEFS}: ${undef.join(', ')}`,
    );
    assert.ok(/`notice\(/.test(doc), 'notice is documented');
  });

  it("chilkat's documented methods and properties are the defined ones", () => {
    const doc = read('docs/lua-api.md');
    const section = doc.slice(doc.indexOf('## MCP client: `require("chilkat")`'));
    const words = new Set<string>();
    const prose = section.slice(0, section.indexOf('\n## ', 5)).replace(/^```[^]*?^```/gm, '');
    for (const span of prose.matchAll(/`([^`]+)`/g)) {
      // `update_string/int/bool` names update_string, update_int and update_bool.
      for (const m of span[1]!.matchAll(/(\w+?_)?(\w+)((?:\/\w+)+)/g))
        for (const w of [m[2]!, ...m[3]!.split('/').slice(1)]) words.add((m[1] ?? '') + w);
      for (const m of span[1]!.matchAll(/\w+/g)) words.add(m[0]);
    }
    for (const [cls, members] of chilkatDefs.classes) {
      if (cls === 'chilkat') continue;
      const undocumented = missing(members, words).filter((n) => n !== 'new');
      assert.deepEqual(
        undocumented,
        [],
        `${cls} members defined in ${CHILKAT_DEFS} but not named in docs/lua-api.md: ${undocumented.join(', ')}`,
      );
    }
  });
});
