/**
 * `plugin_limits.calls_in_flight`: a plugin's `mcp.call` in a loop that never awaits had no bound
 * on the calls it kept running; against a slow tool the last session measured 54-102k calls in
 * flight and 400-750 MiB. Now one plugin's state may have 256 tool calls running (default); one
 * more is refused at once, as LUA_API §3.1 says a refused call is: it still has an id, and
 * `mcp.poll` answers `is_error` with the reason, which names the limit and its key. The flood runs
 * in one principal's handler call, so its share (`calls_in_flight_per_principal`, 64 by default:
 * plugin-calls-per-principal.test.ts) is raised to the total here to reach the plugin's bound.
 *
 * `mcp.get_prompt` and `mcp.read_resource` take a place of the same bound (they wait on another
 * plugin's handler or an upstream as long as a tool call does): before, they were not counted, so
 * a plugin could keep any number of them running, and beside them `mcp.call` still started.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startPluginHub, type PluginHub } from '../helpers/plugin-hub.js';
import { call, honestClient, rssMiB } from './helpers.js';

const SLOW_MS = 4000;

// `flood`: mcp.call on the slow tool for `secs` without awaiting; reports the calls that were
// taken (running: poll is nil), the refused ones and the first refusal. `use`: `n` calls, awaited.
const CALLER = String.raw`
mcp.tool("flood", {
  input_schema = { type = "object", properties = { secs = { type = "number" } } },
  timeout_ms = 60000,
}, function(p)
  local t0, taken, refused, why = os.clock(), 0, 0, nil
  while os.clock() - t0 < p.secs do
    for i = 1, 100 do
      local id = mcp.call("slow", {})
      local r = mcp.poll(id)
      if r == nil then taken = taken + 1
      else refused = refused + 1; why = why or r.content end
    end
  end
  return json.encode({ taken = taken, refused = refused, why = why })
end)
mcp.tool("use", {
  input_schema = { type = "object", properties = { n = { type = "number" } } },
  timeout_ms = 60000,
}, function(p)
  local ids = {}
  for i = 1, p.n do ids[i] = mcp.call("quick", {}) end
  local ok = 0
  for _, r in ipairs(task.await(ids)) do if not r.is_error then ok = ok + 1 end end
  return tostring(ok)
end)
`;

// `inner`: `n` tasks each calling the slow tool with mcp.call_tool, reading a slow resource or
// getting a slow prompt (`how`; they wait, the tasks run side by side), then one mcp.call: what
// each answered and whether mcp.call found a place.
const INNER = String.raw`
mcp.tool("inner", {
  input_schema = { type = "object", properties = { n = { type = "number" }, how = { type = "string" } } },
  timeout_ms = 60000,
}, function(p)
  local tasks = {}
  for i = 1, p.n do
    tasks[i] = task.spawn(function()
      local got, err
      if p.how == "call_tool" then got, err = mcp.call_tool("slow", {})
      elseif p.how == "read_resource" then got, err = mcp.read_resource("slowres://r")
      else got, err = mcp.get_prompt("slowprompt", {}) end
      return err or "ok"
    end)
  end
  task.sleep(300)
  local r = mcp.poll(mcp.call("slow", {}))
  local ok, refused, why = 0, 0, nil
  for _, t in ipairs(task.await(tasks)) do
    if t.value == "ok" then ok = ok + 1 else refused = refused + 1; why = why or t.value end
  end
  return json.encode({ ok = ok, refused = refused, why = why,
    call = r == nil and "started" or r.content })
end)
mcp.resource("slowres://r", { name = "slowres" }, function() task.sleep(${SLOW_MS}) return "r" end)
mcp.prompt("slowprompt", {}, function() task.sleep(${SLOW_MS}) return "p" end)
`;

const SLOW = String.raw`
mcp.tool("slow", { timeout_ms = 60000 }, function() task.sleep(${SLOW_MS}) return "slow" end)
mcp.tool("quick", {}, function() return "quick" end)
`;

/** The default (docs/security.md). */
const LIMIT = 256;
/** Before: hundreds of MiB (400-750 MiB with a 10 s loop). */
const GROWTH_BOUND_MIB = 150;
/** Another plugin's tool, while the flood runs (measured: a few ms). */
const HONEST_P99_MS = 500;

let setup: PluginHub;

before(async () => {
  setup = await startPluginHub(
    {
      'caller.lua': CALLER,
      'slow.lua': SLOW,
      'ok.lua': 'mcp.tool("ok", {}, function() return "ok" end)',
    },
    (d) => [
      '--config',
      d.write(
        'moonhub.json',
        JSON.stringify({
          plugins: { dirs: ['plugins'] },
          plugin_limits: { calls_in_flight_per_principal: LIMIT },
        }),
      ),
      '--no-watch',
    ],
  );
});

after(() => setup?.stop());

describe('plugin_limits.calls_in_flight', () => {
  it('refuses mcp.call past the bound at once, naming it; RSS bounded, others served', async (t) => {
    const honest = await honestClient(setup.hub.url, 'ok');
    const pid = setup.hub.child.pid!;
    const rssBefore = rssMiB(pid);
    let maxRss = rssBefore;
    const sampler = setInterval(() => (maxRss = Math.max(maxRss, rssMiB(pid))), 50);
    let r: { isError: boolean; text: string };
    try {
      r = await call(setup.client, 'flood', { secs: 2 });
    } finally {
      clearInterval(sampler);
    }
    const h = await honest.stop();
    t.diagnostic(
      `${r.text}; RSS ${rssBefore.toFixed(0)} -> ${maxRss.toFixed(0)} MiB; honest ${h.count}, p99 ${h.p99.toFixed(1)} ms`,
    );
    assert.equal(r.isError, false, r.text);
    const out = JSON.parse(r.text) as { taken: number; refused: number; why?: string };
    // The slow calls outlast the loop: exactly the bound was taken, the rest refused.
    assert.equal(out.taken, LIMIT);
    assert.ok(out.refused > 0);
    assert.match(
      out.why ?? '',
      /calls in flight limit exceeded: at most 256 calls .* \(plugin_limits\.calls_in_flight\)/,
    );
    assert.ok(maxRss - rssBefore < GROWTH_BOUND_MIB, `RSS grew ${maxRss - rssBefore} MiB`);
    assert.equal(h.errors, 0, h.messages.join('; '));
    assert.ok(h.count > 0);
    assert.ok(h.p99 < HONEST_P99_MS, `another plugin's p99 ${h.p99} ms`);
  });

  it('the plugin calls again once its calls in flight have ended', async () => {
    // The slow calls the flood left end SLOW_MS after they started.
    await new Promise((res) => setTimeout(res, SLOW_MS));
    const r = await call(setup.client, 'use', { n: 100 });
    assert.equal(r.text, '100');
  });

  /** A hub with plugin_limits.calls_in_flight (and the principal's share) set to 3. */
  const boundedToThree = (plugins: Record<string, string>) =>
    startPluginHub(plugins, (d) => [
      '--config',
      d.write(
        'moonhub.json',
        JSON.stringify({
          plugins: { dirs: ['plugins'] },
          plugin_limits: { calls_in_flight: 3, calls_in_flight_per_principal: 3 },
        }),
      ),
      '--no-watch',
    ]);

  it('takes the bound from the config', async () => {
    const limited = await boundedToThree({ 'caller.lua': CALLER, 'slow.lua': SLOW });
    try {
      const out = JSON.parse((await call(limited.client, 'flood', { secs: 0.05 })).text) as {
        taken: number;
        why?: string;
      };
      assert.equal(out.taken, 3);
      assert.match(out.why ?? '', /at most 3 calls .*plugin_limits\.calls_in_flight/);
    } finally {
      await limited.stop();
    }
  });

  it('counts mcp.call_tool against the same bound as mcp.call (one count for every path)', async () => {
    const limited = await boundedToThree({
      'inner.lua': INNER,
      'slow.lua': SLOW,
    });
    try {
      const out = JSON.parse(
        (await call(limited.client, 'inner', { n: 5, how: 'call_tool' })).text,
      ) as {
        ok: number;
        refused: number;
        why?: string;
        call: string;
      };
      // Before: all 5 call_tool calls ran, and mcp.call still started beside them.
      assert.equal(out.ok, 3);
      assert.equal(out.refused, 2);
      assert.match(
        out.why ?? '',
        /^calls in flight limit exceeded: at most 3 calls \(mcp\.call, tools\.use, mcp\.call_tool, mcp\.get_prompt, mcp\.read_resource\) of this plugin may run at once \(plugin_limits\.calls_in_flight\)/,
      );
      assert.match(out.call, /^calls in flight limit exceeded: at most 3 calls/);
      // The places come back when the calls end.
      assert.deepEqual(
        JSON.parse((await call(limited.client, 'inner', { n: 2, how: 'call_tool' })).text),
        {
          ok: 2,
          refused: 0,
          call: 'started',
        },
      );
      // The mcp.call that round started holds its place until the slow tool ends.
      await new Promise((res) => setTimeout(res, SLOW_MS + 200));
      // mcp.get_prompt and mcp.read_resource take places of the same bound, refused alike.
      for (const how of ['get_prompt', 'read_resource']) {
        const inner = JSON.parse((await call(limited.client, 'inner', { n: 5, how })).text) as {
          ok: number;
          refused: number;
          why?: string;
          call: string;
        };
        // Before: all 5 ran, and mcp.call still started beside them.
        assert.deepEqual([inner.ok, inner.refused], [3, 2], `${how}: ${JSON.stringify(inner)}`);
        assert.match(
          inner.why ?? '',
          /^calls in flight limit exceeded: at most 3 calls \(.*mcp\.get_prompt, mcp\.read_resource\) of this plugin may run at once \(plugin_limits\.calls_in_flight\)/,
        );
        assert.match(inner.call, /^calls in flight limit exceeded: at most 3 calls/, how);
      }
    } finally {
      await limited.stop();
    }
  });
});
