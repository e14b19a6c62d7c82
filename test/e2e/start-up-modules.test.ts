/**
 * Start-up loads what the command needs (docs/performance.md, "Start-up"): the MCP SDK client
 * (with zod) is loaded with the first upstream proxy or chilkat.Mcp connection, the Redis client
 * with `cluster.redis`, and the hub itself by the commands that run one. A plugin worker that
 * proxies nothing never loads the SDK: before, every worker loaded ~150 modules it did not use,
 * about a third of its start. Each module load is seen through a loader hook in every thread.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, after, before } from 'node:test';
import { pathToFileURL } from 'node:url';
import { BIN, startMoonhub } from '../helpers/moonhub-process.js';
import { startEverythingHttp, type HttpUpstream } from '../helpers/everything.js';
import { callTool, pluginsDir } from '../reliability/isolation-helpers.js';

/** A loader hook writing "<thread id> <url>" for every module any thread loads into `log`. */
function moduleLog(): { nodeArgs: string[]; loaded: () => Map<string, string[]> } {
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-modules-'));
  const log = join(dir, 'loaded.txt');
  writeFileSync(log, '');
  writeFileSync(
    join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
let tag = '?';
export function initialize(data) { tag = data.tag; }
export async function load(url, ctx, next) {
  appendFileSync(${JSON.stringify(log)}, tag + ' ' + url + '\\n');
  return next(url, ctx);
}
`,
  );
  const hooks = pathToFileURL(join(dir, 'hooks.mjs')).href;
  writeFileSync(
    join(dir, 'register.mjs'),
    `import { register } from 'node:module';
import { threadId } from 'node:worker_threads';
register(${JSON.stringify(hooks)}, { data: { tag: String(threadId) } });
`,
  );
  return {
    nodeArgs: ['--import', pathToFileURL(join(dir, 'register.mjs')).href],
    loaded: () => {
      const byThread = new Map<string, string[]>();
      for (const line of readFileSync(log, 'utf8').split('\n')) {
        const at = line.indexOf(' ');
        if (at < 0) continue;
        const list = byThread.get(line.slice(0, at)) ?? [];
        list.push(line.slice(at + 1));
        byThread.set(line.slice(0, at), list);
      }
      return byThread;
    },
  };
}

const SDK_CLIENT = /node_modules\/@modelcontextprotocol\/client\//;
const ZOD = /node_modules\/zod\//;
const HUB = /dist\/src\/hub\.js$/;

describe('start-up loads what the command needs', () => {
  let upstream: HttpUpstream;
  before(async () => {
    upstream = await startEverythingHttp();
  });
  after(async () => upstream?.stop());

  it('`moonhub --version` loads neither the hub nor the SDK', () => {
    const seen = moduleLog();
    const r = spawnSync(process.execPath, [...seen.nodeArgs, BIN, '--version'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^\d+\.\d+\.\d+/);
    const main = seen.loaded().get('0') ?? [];
    assert.ok(
      main.some((u) => u.endsWith('/dist/src/cli/main.js')),
      'the hook saw the CLI',
    );
    assert.deepEqual(
      main.filter((u) => HUB.test(u) || SDK_CLIENT.test(u) || u.includes('/ioredis/')),
      [],
    );
  });

  it('a hub whose plugin proxies nothing loads no SDK client in any thread', async () => {
    const seen = moduleLog();
    const dir = pluginsDir({
      'echo.lua':
        'mcp.tool("echo", { input = { text = "string" } }, function(a) return a.text end)',
    });
    const hub = await startMoonhub(['--plugins', dir, '--no-watch'], {}, seen.nodeArgs);
    try {
      assert.equal((await callTool(hub.url, 'echo', { text: 'hi' })).text, 'hi');
      const threads = seen.loaded();
      const worker = [...threads].find(([, urls]) =>
        urls.some((u) => u.endsWith('/dist/src/plugins/plugin-worker.js')),
      );
      assert.ok(worker, `no thread ran a plugin worker: ${[...threads.keys()].join(', ')}`);
      for (const [thread, urls] of threads)
        assert.deepEqual(
          urls.filter((u) => SDK_CLIENT.test(u) || ZOD.test(u)),
          [],
          `thread ${thread} loaded the SDK client or zod`,
        );
    } finally {
      await hub.stop();
    }
  });

  it('loads the SDK client with the first proxy, on the hub thread only, and proxies', async () => {
    const seen = moduleLog();
    const dir = pluginsDir({
      'gate.lua': `assert(mcp.proxy(${JSON.stringify(upstream.url)}, { prefix = "ev." }))\n`,
    });
    const hub = await startMoonhub(['--plugins', dir, '--no-watch'], {}, seen.nodeArgs);
    try {
      const r = await callTool(hub.url, 'ev.echo', { message: 'through' });
      assert.match(r.text, /through/);
      const threads = seen.loaded();
      assert.ok(
        (threads.get('0') ?? []).some((u) => SDK_CLIENT.test(u)),
        'hub thread',
      );
      for (const [thread, urls] of threads)
        if (thread !== '0')
          assert.ok(!urls.some((u) => SDK_CLIENT.test(u)), `thread ${thread} loaded the SDK`);
    } finally {
      await hub.stop();
    }
  });
});
