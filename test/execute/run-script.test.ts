/**
 * `moonhub run FILE.lua` with the script API: mcp.call/task.await fan-out, tools.use, mcp.image
 * under --root, against the loaded plugins; and notice reaching the caller's peer.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { registerCodeMode, type CodeModeBuiltins } from '../../src/execute/index.js';
import { silentLogger } from '../../src/log.js';
import { Registry } from '../../src/registry/registry.js';
import type { CallPeer } from '../../src/registry/types.js';
import { BIN, ROOT } from '../helpers/moonhub-process.js';

const PLUGINS = join(ROOT, 'test', 'fixtures', 'code-mode-plugins');

describe('moonhub run with the script API', () => {
  it('fans out calls to plugin tools, uses tools.use and reads a picture under --root', () => {
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-run-api-'));
    const script = join(dir, 'fan.lua');
    writeFileSync(
      script,
      `local ids = {}
       for i = 1, 4 do ids[i] = mcp.call("work.slow", { n = i, ms = 50 }) end
       local ns = {}
       for i, r in ipairs(task.await(ids)) do ns[i] = json.decode(r.content).n end
       notice("fanned out")
       local pic = mcp.image("progressive-7x5.jpg")
       return { ns = ns, echo = tools.use("work.echo", { text = "hi" }), w = pic.width,
                names = mcp.listTools() }`,
    );
    const r = spawnSync(
      process.execPath,
      [
        BIN,
        'run',
        script,
        '--plugins',
        PLUGINS,
        '--root',
        join(ROOT, 'test', 'fixtures', 'images'),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /notice: fanned out/);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.deepEqual(out.ns, [1, 2, 3, 4]);
    assert.equal(out.echo, 'hi');
    assert.equal(out.w, 7);
    // The plugins' tools and the hub's status built-in; `run` has no execute.
    assert.deepEqual(out.names, ['hub_status', 'work.echo', 'work.peak', 'work.slow']);
  });
});

describe('notice', () => {
  let registry: Registry;
  let builtins: CodeModeBuiltins;
  before(() => {
    registry = new Registry();
    builtins = registerCodeMode(registry, {}, silentLogger);
  });
  after(() => builtins.close());

  it("sends progress and a log message with pictures to the caller's peer", async () => {
    // The transports' CallPeer is built elsewhere; this records what execute hands it.
    const progress: unknown[][] = [];
    const logs: unknown[][] = [];
    const peer: CallPeer = {
      clientCapabilities: undefined,
      progress: (...a) => {
        progress.push(a);
        return true;
      },
      log: (...a) => void logs.push(a),
      request: () => Promise.reject(new Error('not here')),
    };
    const png =
      'iVBORw0KGgoAAAANSUhEUgAAAAcAAAAFCAYAAAB4ka1VAAAAAXNSR0IArs4c6QAAAA1JREFUGFdjYGBg+A8AAQQBAHAgZQsAAAAASUVORK5CYII=';
    const r = await registry.callTool(
      'execute',
      {
        code: `notice("step one")
               notice("a shot", { shot = mcp.image({ data = "${png}" }) })
               return "done"`,
      },
      { hub_id: 'h', peer },
    );
    assert.equal((r.structuredContent as { result: string }).result, 'done');
    assert.deepEqual(progress, [
      [1, undefined, 'step one'],
      [2, undefined, 'a shot'],
    ]);
    assert.equal(logs.length, 2);
    const [level, data, logger] = logs[1]!;
    assert.equal(level, 'info');
    assert.equal(logger, 'execute');
    assert.deepEqual(data, {
      text: 'a shot',
      params: { shot: { type: 'image', image: 1 } },
      images: [{ type: 'image', data: png, mimeType: 'image/png' }],
    });
  });

  it('is a no-op for the script when there is no peer', async () => {
    const r = await registry.callTool(
      'execute',
      { code: 'notice("nobody") return 1' },
      { hub_id: 'h' },
    );
    assert.equal((r.structuredContent as { result: number }).result, 1);
  });
});
