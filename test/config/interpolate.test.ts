/**
 * `${ENV_VAR}` in the config (issue 15): substituted in every string, with fallbacks and an
 * escape; an unset variable is an error naming the key and the variable, never a value. And a
 * config `upstreams` entry's command line survives the trip through the `stdio:` address.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { interpolateEnv } from '../../src/config/interpolate.js';
import { loadConfig } from '../../src/config/config.js';
import { upstreamAddress } from '../../src/upstream/from-config.js';
import { splitCommandLine } from '../../src/upstream/transports.js';
import { clientSetup } from '../../src/sessions/client-setup.js';

describe('${ENV_VAR} interpolation', () => {
  const env = { TOKEN: 's3cret', EMPTY: '' };

  it('substitutes in nested strings, with fallbacks and the $${ escape, and lists the values', () => {
    const r = interpolateEnv(
      {
        a: 'Bearer ${TOKEN}',
        b: ['${MISSING:-dflt}', '${EMPTY:-e}'],
        c: { d: 'x$${TOKEN}' },
        n: 3,
      },
      env,
    );
    assert.deepEqual(r.data, {
      a: 'Bearer s3cret',
      b: ['dflt', 'e'],
      c: { d: 'x${TOKEN}' },
      n: 3,
    });
    assert.deepEqual(r.secrets, ['s3cret']);
  });

  it('an unset variable names the key and the variable', () => {
    assert.throws(
      () => interpolateEnv({ upstreams: { gh: { headers: { A: '${NOPE}' } } } }, env),
      /'upstreams\.gh\.headers\.A' uses \$\{NOPE\}, but the environment variable NOPE is not set/,
    );
  });

  it('a config file: $schema accepted, values substituted, upstream cwd relative to the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-interp-'));
    const file = join(dir, 'moonhub.json');
    process.env.MH_INTERP_TEST = 'tok-1';
    writeFileSync(
      file,
      JSON.stringify({
        $schema: 'https://moonhub.dev/schemas/config.schema.json',
        plugins: { settings: { p: { token: '${MH_INTERP_TEST}' } } },
        upstreams: { s: { command: 'node', args: ['x.js'], cwd: 'sub' } },
      }),
    );
    const config = loadConfig(file);
    assert.equal(config.plugins?.settings?.p?.token, 'tok-1');
    assert.equal(config.upstreams?.s?.cwd, join(dir, 'sub'));
    assert.deepEqual(config.secrets, ['tok-1']);
    delete process.env.MH_INTERP_TEST;
  });

  it('a bad upstream entry is refused with its key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-interp-'));
    const file = join(dir, 'moonhub.yaml');
    writeFileSync(file, 'upstreams:\n  x: { args: [a] }\n');
    assert.throws(() => loadConfig(file), /'upstreams\.x' needs either command/);
    writeFileSync(file, 'upstreams:\n  x: { url: http://h/mcp, color: red }\n');
    assert.throws(() => loadConfig(file), /'upstreams\.x\.color' is not a known setting/);
  });
});

describe('upstream addresses and client set-up', () => {
  it('a command and its args come back word for word from the stdio: address', () => {
    const args = ['-y', 'a b', "it's", '', '$HOME', 'x"y', 'back\\slash'];
    const address = upstreamAddress({ command: '/opt/my server/bin', args });
    assert.ok(address.startsWith('stdio:'));
    assert.deepEqual(splitCommandLine(address.slice('stdio:'.length)), [
      '/opt/my server/bin',
      ...args,
    ]);
  });

  it('client set-up carries the token where each client wants it', () => {
    const s = clientSetup('moonhub-dev', 'http://127.0.0.1:8848/mcp', 'mhs_x');
    assert.equal(
      s.claude_code,
      "claude mcp add --transport http moonhub-dev http://127.0.0.1:8848/mcp --header 'Authorization: Bearer mhs_x'",
    );
    assert.deepEqual(s.vscode.servers['moonhub-dev'], {
      type: 'http',
      url: 'http://127.0.0.1:8848/mcp',
      headers: { Authorization: 'Bearer mhs_x' },
    });
    assert.deepEqual(s.cursor.mcpServers['moonhub-dev'], {
      url: 'http://127.0.0.1:8848/mcp',
      headers: { Authorization: 'Bearer mhs_x' },
    });
    assert.match(
      s.inspector,
      /--server-url http:\/\/127\.0\.0\.1:8848\/mcp --header 'Authorization: Bearer mhs_x'$/,
    );
  });
});
