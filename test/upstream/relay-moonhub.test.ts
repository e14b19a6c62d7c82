/**
 * Log messages and progress an upstream sends during a call reach the agent whose call caused
 * them: another moonhub as the upstream, over HTTP and over stdio, its tool calling
 * `context.log` and `context.progress`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';

const CHATTY = `
mcp.tool("chatty", {}, function(_, context)
  context.log("warning", "upstream says hi")
  context.progress(1, 2, "half way")
  task.sleep(20)
  context.progress(2, 2, "done")
  return "finished"
end)
`;

describe('relay of upstream log messages and progress', () => {
  let upstream: MoonhubProcess;
  let hub: MoonhubProcess;
  let client: Client;

  before(async () => {
    const upDir = mkdtempSync(join(tmpdir(), 'moonhub-chatty-up-'));
    const hubDir = mkdtempSync(join(tmpdir(), 'moonhub-chatty-down-'));
    writeFileSync(join(upDir, 'chatty.lua'), CHATTY);
    upstream = await startMoonhub(['--plugins', upDir]);
    const stdio = `stdio:${process.execPath} ${BIN} serve --stdio --no-watch --plugins ${upDir}`;
    writeFileSync(
      join(hubDir, 'up.lua'),
      `assert(mcp.proxy(${JSON.stringify(upstream.url)}, { prefix = "h." }))
       assert(mcp.proxy(${JSON.stringify(stdio)}, { prefix = "s." }))\n`,
    );
    hub = await startMoonhub(['--plugins', hubDir]);
    ({ client } = await connectHttpClient(hub.url, 'legacy'));
    await client.setLoggingLevel('debug');
  });

  after(async () => {
    await client?.close();
    await hub?.stop();
    await upstream?.stop();
  });

  for (const prefix of ['h.', 's.']) {
    it(`passes ${prefix === 'h.' ? 'an HTTP' : 'a stdio'} upstream's log and progress to the agent`, async () => {
      const logs: unknown[] = [];
      client.setNotificationHandler('notifications/message', (n) => {
        logs.push(n.params.data);
      });
      const progress: [number, string | undefined][] = [];
      const r = await client.callTool(
        { name: `${prefix}chatty`, arguments: {} },
        { onprogress: (p) => progress.push([p.progress, p.message]) },
      );
      assert.deepEqual(r.content, [{ type: 'text', text: 'finished' }]);
      assert.deepEqual(progress, [
        [1, 'half way'],
        [2, 'done'],
      ]);
      assert.ok(logs.includes('upstream says hi'), `logs seen: ${JSON.stringify(logs)}`);
    });
  }
});
