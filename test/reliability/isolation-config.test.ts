/**
 * The isolation keys of the config file: a bad value stops the hub with a message naming the key;
 * `plugins.isolation: none` still serves plugins on the hub's thread.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { BIN, startMoonhub } from '../helpers/moonhub-process.js';
import { callTool, configFile, pluginsDir } from './isolation-helpers.js';

const PLUGINS = pluginsDir({ 'ping.lua': 'mcp.tool("ping", {}, function() return "pong" end)' });

function serveWith(plugins: Record<string, unknown>): { status: number | null; stderr: string } {
  const config = configFile({ plugins: { dirs: [PLUGINS], ...plugins } });
  const r = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--config', config], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: r.status, stderr: r.stderr };
}

describe('plugins.isolation and plugins.hard_stop_grace_ms', () => {
  it('refuses an unknown isolation mode, naming the key', () => {
    const r = serveWith({ isolation: 'threads' });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /plugins\.isolation/);
  });

  it('refuses a negative grace, naming the key', () => {
    const r = serveWith({ hard_stop_grace_ms: -1 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /plugins\.hard_stop_grace_ms/);
  });

  it('serves plugins on the hub thread with isolation none', async () => {
    const config = configFile({ plugins: { dirs: [PLUGINS], isolation: 'none' } });
    const hub = await startMoonhub(['--config', config, '--no-watch']);
    try {
      assert.equal((await callTool(hub.url, 'ping')).text, 'pong');
    } finally {
      await hub.stop();
    }
  });
});
