/**
 * Human logs and log levels: `--log-level` and MOONHUB_LOG_LEVEL take only known levels (a clear
 * error otherwise), `--log-format pretty` gives short lines, JSON lines otherwise; and the call
 * observer on the stdio transport (an audit line per call over stdio).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkLogLevel, createLogger } from '../../src/log.js';
import { formatLine } from '../../src/log-pretty.js';
import { BIN } from '../helpers/moonhub-process.js';
import { makeHubDir } from '../helpers/auth-hub.js';
import { waitFor } from '../helpers/mcp-client.js';

const ECHO = `mcp.tool("echo", {}, function(p) return p.text end)`;

function serveOnce(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, ...env },
  });
}

describe('log levels and formats', () => {
  it('knows the levels and names them when one is wrong', () => {
    assert.equal(checkLogLevel('DEBUG'), 'debug');
    assert.throws(
      () => checkLogLevel('verbose'),
      /'verbose' is not a log level; use one of fatal, error, warn, info, debug, trace, silent/,
    );
    assert.throws(() => createLogger('loud'), /--log-level: 'loud' is not a log level/);
  });

  it('formats a JSON line for a person, coloured only when asked', () => {
    const line = JSON.stringify({
      level: 40,
      time: Date.UTC(2026, 0, 2, 3, 4, 5, 6),
      msg: 'plugin failed',
      app: 'moonhub',
      plugin: 'notes',
      file: 'a b.lua',
    });
    assert.equal(
      formatLine(line, false),
      '03:04:05.006 WARN  plugin failed plugin=notes file="a b.lua"\n',
    );
    assert.ok(formatLine(line, true).includes('\x1b[33mWARN '));
    assert.equal(formatLine('not json', false), 'not json\n');
  });

  it('serve refuses an unknown --log-level or MOONHUB_LOG_LEVEL with a clear error', () => {
    const dir = makeHubDir({ echo: ECHO });
    const bad = serveOnce(['--plugins', dir.plugins, '--log-level', 'verbose']);
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /--log-level.*one of fatal, error, warn, info, debug, trace, silent/);
    const env = serveOnce(['--plugins', dir.plugins], { MOONHUB_LOG_LEVEL: 'chatty' });
    assert.notEqual(env.status, 0);
    assert.match(env.stderr, /MOONHUB_LOG_LEVEL: 'chatty' is not a log level/);
    const fmt = serveOnce(['--plugins', dir.plugins, '--log-format', 'xml']);
    assert.notEqual(fmt.status, 0);
    assert.match(fmt.stderr, /--log-format.*one of json, pretty, auto/);
  });

  for (const format of ['pretty', 'json'] as const) {
    it(`--log-format ${format} writes ${format === 'pretty' ? 'short lines' : 'JSON lines'}`, async () => {
      const dir = makeHubDir({ echo: ECHO });
      const child = spawn(
        process.execPath,
        [
          BIN,
          'serve',
          '--port',
          '0',
          '--no-watch',
          '--plugins',
          dir.plugins,
          '--log-format',
          format,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let err = '';
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      try {
        await waitFor(() => /plugin loaded/.test(err), 20_000, 'the plugin loaded log line');
      } finally {
        child.kill('SIGTERM');
      }
      const line = err.split('\n').find((l) => l.includes('plugin loaded'))!;
      if (format === 'pretty') {
        assert.match(line, /^\d\d:\d\d:\d\d\.\d{3} INFO {2}plugin loaded plugin=echo /);
        assert.ok(!line.includes('\x1b['), 'no colour codes when stderr is not a terminal');
      } else {
        assert.equal((JSON.parse(line) as { msg: string }).msg, 'plugin loaded');
      }
    });
  }
});

describe('the call observer over stdio', () => {
  it('writes an audit line per call with transport stdio', async () => {
    const dir = makeHubDir({ echo: ECHO });
    const audit = join(dir.root, 'audit.jsonl');
    const child = spawn(
      process.execPath,
      [BIN, 'serve', '--stdio', '--no-watch', '--plugins', dir.plugins, '--audit', audit],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const send = (msg: unknown) => child.stdin!.write(JSON.stringify(msg) + '\n');
    try {
      send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 't', version: '1' },
        },
      });
      await waitFor(() => out.includes('"id":1'), 20_000, 'initialize');
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      send({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'x' } },
      });
      send({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'nope', arguments: {} },
      });
      await waitFor(() => out.includes('"id":3'), 20_000, 'the calls');
      const lines = () =>
        readFileSync(audit, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, unknown>);
      await waitFor(() => lines().length >= 3, 5000, 'three audit lines');
      // Lines are written as calls end, so the unknown tool's may come first.
      const calls = lines()
        .filter((l) => l.method === 'tools/call')
        .sort((a, b) => String(a.name).localeCompare(String(b.name)));
      assert.deepEqual(
        calls.map((c) => [c.transport, c.name, c.outcome, c.argument_bytes]),
        [
          ['stdio', 'echo', 'ok', 12],
          ['stdio', 'nope', 'error', 2],
        ],
      );
      assert.equal(lines()[0]!.method, 'initialize');
    } finally {
      child.kill('SIGTERM');
    }
  });
});
