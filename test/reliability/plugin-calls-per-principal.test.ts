/**
 * `plugin_limits.calls_in_flight_per_principal`: a plugin's calls in flight
 * (`plugin_limits.calls_in_flight`, 256) were one count shared by every principal, so one agent
 * whose calls made a plugin fan out to a slow tool took all 256 places and every other agent's
 * calls into that plugin were refused (`calls in flight limit exceeded`) until they ended. Now
 * the handler calls of one principal (and the tasks they spawn) past a quarter of them (64 by
 * default) may only borrow free places while more than that share remain: the last 64 stay for
 * the others. One more is refused at once naming the key, while another principal's calls into
 * the same plugin still start. The plugin's own calls (top level) take the total only.
 *
 * And a plugin's inner calls by name (`mcp.call`, `tools.use`, `mcp.call_tool`) keep the front
 * door's `limits.name_length`, refused with its error (the name not echoed) and counted in
 * `moonhub_limit_refusals_total{limit="name_length"}`, as execute's inner calls now are too.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTwoAgentHub, type Issued, type TwoAgentHub } from '../helpers/auth-hub.js';
import { baseOf, sample, scrape } from '../helpers/operations.js';
import { rssMiB } from './helpers.js';
import { modern, sleep, type Answer } from './limits-helpers.js';

const SLOW_MS = 4000;

// `fan.out`: `n` calls of the slow tool started at once (never awaited before the last), then all
// awaited; reports how many started, how many were refused and the first refusal. `fan.one`: one
// quick call through the plugin. `fan.top`: what the top level saw (its calls: no principal).
const FAN = String.raw`
local top = { taken = 0, refused = 0 }
for i = 1, 5 do
  if mcp.poll(mcp.call("slow.quick", {})) == nil then top.taken = top.taken + 1
  else top.refused = top.refused + 1 end
end
mcp.tool("fan.out", {
  input_schema = { type = "object", properties = { n = { type = "number" } } },
  timeout_ms = 60000,
}, function(p)
  local ids, refused, why = {}, 0, nil
  for i = 1, p.n do
    local id = mcp.call("slow.wait", {})
    local r = mcp.poll(id)
    if r == nil then ids[#ids + 1] = id
    else refused = refused + 1; why = why or r.content end
  end
  if #ids > 0 then task.await(ids) end
  return json.encode({ taken = #ids, refused = refused, why = why })
end)
mcp.tool("fan.one", {}, function()
  local r = task.await(mcp.call("slow.quick", {}))
  if r.is_error then error(r.content) end
  return r.content
end)
mcp.tool("fan.top", {}, function() return json.encode(top) end)
mcp.tool("fan.name", {
  input_schema = { type = "object", properties = { len = { type = "number" }, how = { type = "string" } } },
}, function(p)
  local name = string.rep("x", p.len)
  if p.how == "use" then
    local ok, err = pcall(tools.use, name, {})
    return tostring(err)
  elseif p.how == "call_tool" then
    local content, err = mcp.call_tool(name, {})
    return tostring(err)
  elseif p.how == "get_prompt" then
    local prompt, err = mcp.get_prompt(name, {})
    return tostring(err)
  elseif p.how == "read_resource" then
    local contents, err = mcp.read_resource("fan://" .. name)
    return tostring(err)
  end
  return task.await(mcp.call(name, {})).content
end)
`;

const SLOW = String.raw`
mcp.tool("slow.wait", { timeout_ms = 60000 }, function() task.sleep(${SLOW_MS}) return "slow" end)
mcp.tool("slow.quick", {}, function() return "quick" end)
`;

/** plugin_limits.calls_in_flight's default, and a quarter of it (docs/security.md). */
const TOTAL = 256;
const SHARE = 64;
/** B's call through the plugin while A is at its share (measured: tens of ms). */
const B_BOUND_MS = 1500;

type Hub = TwoAgentHub;

const startHub = (limits = '', plugins = '{ dirs: [plugins] }'): Promise<Hub> =>
  startTwoAgentHub({ fan: FAN, slow: SLOW }, limits, plugins);

const callTool = (h: Hub, who: Issued, name: string, args: Record<string, unknown> = {}) =>
  modern(h.hub.url, who.token, 'tools/call', { name, arguments: args });

function textOf(a: Answer): string {
  const result = a.body?.result as { content?: { text?: string }[]; isError?: boolean };
  assert.ok(result !== undefined, a.text.slice(0, 300));
  return (result.content ?? []).map((c) => c.text ?? '').join('');
}

async function refusals(h: Hub, limit: string): Promise<number> {
  return sample(await scrape(baseOf(h.hub.url), h.admin), 'moonhub_limit_refusals_total', {
    limit,
  });
}

/** The refusal count once it reached `want` (reported after the worker's turn), or the last seen. */
async function refusalsReaching(h: Hub, limit: string, want: number): Promise<number> {
  let n = 0;
  for (let i = 0; i < 40; i++) {
    n = await refusals(h, limit);
    if (n >= want) return n;
    await sleep(50);
  }
  return n;
}

describe('plugin_limits.calls_in_flight_per_principal', () => {
  let h: Hub;
  before(async () => (h = await startHub()));
  after(async () => h?.hub.stop());

  it("A at its share is refused naming the key; B's call through the plugin starts", async () => {
    const before = await refusals(h, 'calls_in_flight_per_principal');
    // Five fan-outs of A at once: 320 calls asked for, more than the plugin's 256 in all.
    const fans = Array.from({ length: 5 }, () => callTool(h, h.A, 'fan.out', { n: SHARE }));
    await sleep(800);
    const t0 = performance.now();
    const b = await callTool(h, h.B, 'fan.one');
    const bMs = performance.now() - t0;
    const outs = (await Promise.all(fans)).map(
      (a) => JSON.parse(textOf(a)) as { taken: number; refused: number; why?: string },
    );
    const taken = outs.reduce((n, o) => n + o.taken, 0);
    const refused = outs.reduce((n, o) => n + o.refused, 0);
    const why = outs.find((o) => o.why !== undefined)?.why ?? '';
    console.log(`A took ${taken}, refused ${refused}; B answered in ${bMs.toFixed(0)} ms`);
    assert.equal(b.body?.error, undefined, b.text.slice(0, 300));
    assert.equal(textOf(b), 'quick', b.text.slice(0, 300));
    assert.ok(bMs < B_BOUND_MS, `B waited ${bMs.toFixed(0)} ms`);
    // A borrows free places past its share, but not the last 64: those stay for B.
    assert.equal(taken, TOTAL - SHARE);
    assert.equal(refused, 5 * SHARE - (TOTAL - SHARE));
    assert.match(
      why,
      /^calls in flight limit exceeded: this principal has 192 calls \(mcp\.call, tools\.use, mcp\.call_tool, mcp\.get_prompt, mcp\.read_resource\) of this plugin running, past its share of 64 \(plugin_limits\.calls_in_flight_per_principal\), and the plugin's last 64 places are kept for other principals/,
    );
    const counted = await refusalsReaching(h, 'calls_in_flight_per_principal', before + refused);
    assert.equal(counted - before, refused);
  });

  it("A's places come back once its calls end", async () => {
    const out = JSON.parse(textOf(await callTool(h, h.A, 'fan.out', { n: SHARE }))) as {
      taken: number;
    };
    assert.equal(out.taken, SHARE);
  });

  it('takes the share from the config; the top level takes the total only', async () => {
    const small = await startHub(
      'plugin_limits: { calls_in_flight: 8, calls_in_flight_per_principal: 2 }\n',
    );
    try {
      // Outside any handler: 5 calls, past the share of 2 (no principal), within the total of 8.
      assert.deepEqual(JSON.parse(textOf(await callTool(small, small.A, 'fan.top'))), {
        taken: 5,
        refused: 0,
      });
      // A borrows past its share of 2 up to 6 of the 8; the last 2 stay for B.
      const fan = callTool(small, small.A, 'fan.out', { n: 8 });
      await sleep(500);
      const other = JSON.parse(textOf(await callTool(small, small.B, 'fan.out', { n: 2 }))) as {
        taken: number;
      };
      const a = JSON.parse(textOf(await fan)) as { taken: number; why?: string };
      assert.equal(a.taken, 6);
      assert.match(
        a.why ?? '',
        /has 6 calls .* past its share of 2 \(plugin_limits\.calls_in_flight_per_principal\)/,
      );
      assert.equal(other.taken, 2);
    } finally {
      await small.hub.stop();
    }
  });

  it('defaults the share to a quarter of a configured calls_in_flight', async () => {
    const small = await startHub('plugin_limits: { calls_in_flight: 12 }\n');
    try {
      const a = JSON.parse(textOf(await callTool(small, small.A, 'fan.out', { n: 12 }))) as {
        taken: number;
        why?: string;
      };
      assert.equal(a.taken, 9);
      assert.match(a.why ?? '', /past its share of 3 .*calls_in_flight_per_principal/);
    } finally {
      await small.hub.stop();
    }
  });

  // The same default hub: its refusals are counted from what the count was, and A's fan-outs
  // above have ended (their places came back in the test before).
  describe("a plugin's inner calls keep limits.name_length", () => {
    it('refuses mcp.call, tools.use, mcp.call_tool (and prompt names, URIs) past it, counted; the hub stays well', async () => {
      const before = await refusals(h, 'name_length');
      const pid = h.hub.child.pid!;
      const rss0 = rssMiB(pid);
      const bound =
        /^Invalid params: a tool name may be at most 256 characters \(limits\.name_length\); this one has 1000000$/;
      for (const how of ['call', 'use', 'call_tool']) {
        for (let i = 0; i < 10; i++) {
          const out = textOf(await callTool(h, h.A, 'fan.name', { len: 1_000_000, how }));
          // tools.use raises the message with Lua's position in front.
          const got = out.replace(/^.*?: (?=Invalid params)/, '');
          assert.ok(bound.test(got), `${how}: ${out.slice(0, 200)}`);
        }
      }
      const exact = textOf(await callTool(h, h.A, 'fan.name', { len: 256, how: 'call' }));
      assert.match(exact, /^Unknown tool/, 'a name of exactly 256 is looked up');
      // Prompt names and resource URIs as at the front door (prompts/get, resources/read).
      const prompt = textOf(await callTool(h, h.A, 'fan.name', { len: 257, how: 'get_prompt' }));
      assert.equal(
        prompt,
        'Invalid params: a prompt name may be at most 256 characters (limits.name_length); this one has 257',
      );
      const uri = textOf(await callTool(h, h.A, 'fan.name', { len: 5000, how: 'read_resource' }));
      assert.equal(
        uri,
        'Invalid params: a resource URI may be at most 4096 characters (limits.subscriptions.uri_length); this one has 5006',
      );
      const counted = await refusalsReaching(h, 'name_length', before + 32);
      assert.equal(counted - before, 32);
      assert.ok(rssMiB(pid) - rss0 < 100, 'RSS bounded');
      assert.equal(textOf(await callTool(h, h.B, 'fan.one')), 'quick');
    });
  });
});

describe("the same on the hub's thread (plugins.isolation: none)", () => {
  it('takes the share and counts the refusals without a worker', async () => {
    const h = await startHub(
      'plugin_limits: { calls_in_flight: 8, calls_in_flight_per_principal: 2 }\n',
      '{ dirs: [plugins], isolation: none }',
    );
    try {
      const fan = callTool(h, h.A, 'fan.out', { n: 8 });
      await sleep(500);
      const other = JSON.parse(textOf(await callTool(h, h.B, 'fan.out', { n: 2 }))) as {
        taken: number;
      };
      const a = JSON.parse(textOf(await fan)) as { taken: number; why?: string };
      assert.equal(a.taken, 6);
      assert.match(a.why ?? '', /past its share of 2 .*calls_in_flight_per_principal/);
      assert.equal(other.taken, 2);
      assert.equal(await refusalsReaching(h, 'calls_in_flight_per_principal', 2), 2);
      const out = textOf(await callTool(h, h.A, 'fan.name', { len: 300, how: 'call' }));
      assert.match(out, /a tool name may be at most 256 characters \(limits\.name_length\)/);
      assert.equal(await refusalsReaching(h, 'name_length', 1), 1);
    } finally {
      await h.hub.stop();
    }
  });
});
