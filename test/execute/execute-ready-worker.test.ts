/**
 * A worker that has said `idle` (its next state made) starts a run as it reads it, and the hub
 * arms the hard stop as it sends the run; a fresh worker still reports `started` first. Both
 * paths, on one worker in a real hub: the hard stop fires on time on each, and runs after it
 * (on the replacement, then on the same worker again) answer correctly.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { ROOT, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';

const PLUGINS = join(ROOT, 'test', 'fixtures', 'code-mode-plugins');
const STUCK = `return ("a"):rep(200):find(".-.-.-.-.-b")`;
const THREE_CALLS = `local ids = {}
for i, t in ipairs({ "a", "b", "c" }) do ids[i] = mcp.call("work.echo", { text = t }) end
local out = {}
for i, r in ipairs(task.await(ids)) do out[i] = r.content end
return table.concat(out, ",")`;

type Client = Awaited<ReturnType<typeof connectHttpClient>>['client'];
interface Result {
  content: { type: string; text?: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

describe('execute on a ready worker and on a fresh one', () => {
  let hub: MoonhubProcess;
  let client: Client;
  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-exec-ready-'));
    const config = join(dir, 'moonhub.yaml');
    writeFileSync(
      config,
      `plugins: { dirs: [${JSON.stringify(PLUGINS)}] }\nexecute: { workers: 1, grace_ms: 200 }\n`,
    );
    hub = await startMoonhub(['--config', config, '--no-watch']);
    client = (await connectHttpClient(hub.url, 'modern')).client;
  });
  after(async () => {
    await client.close();
    await hub.stop();
  });

  const run = async (code: string, timeout_ms?: number) => {
    const args: Record<string, unknown> = { code };
    if (timeout_ms !== undefined) args.timeout_ms = timeout_ms;
    const t0 = performance.now();
    const r = (await client.callTool({ name: 'execute', arguments: args })) as Result;
    return { r, ms: performance.now() - t0 };
  };
  const hardStopped = (r: Result) => {
    assert.equal(r.isError, true);
    assert.match(
      r.content[0]!.text!,
      /^timeout: the script ran longer than its 400 ms limit and was stopped hard/,
    );
  };

  it('the hard stop fires on time on both paths; later runs are correct', async () => {
    const first = await run(THREE_CALLS);
    assert.equal((first.r.structuredContent as { result: string }).result, 'a,b,c');
    // Time for the worker to close that run's state, make the next one and say idle.
    await new Promise((r) => setTimeout(r, 500));
    const ready = await run(STUCK, 400);
    hardStopped(ready.r);
    // 400 ms + 200 ms grace; generous for a loaded machine, far below the 30 s start limit.
    assert.ok(ready.ms >= 390 && ready.ms < 5_000, `stopped after ${ready.ms} ms`);
    // The replacement is made for this run: it loads its module, then reports 'started'.
    const fresh = await run(STUCK, 400);
    hardStopped(fresh.r);
    assert.ok(fresh.ms >= 390 && fresh.ms < 10_000, `stopped after ${fresh.ms} ms`);
    for (let i = 0; i < 4; i++) {
      const again = await run(THREE_CALLS);
      assert.equal(again.r.isError, undefined, JSON.stringify(again.r));
      assert.equal((again.r.structuredContent as { result: string }).result, 'a,b,c');
      // Between runs, the worker's next state is made (the ready path again).
      if (i % 2 === 1) await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(hub.alive());
  });
});
