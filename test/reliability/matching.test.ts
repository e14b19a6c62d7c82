/**
 * Linear-time matching of client input (issue 12, item 3): resource templates and upstream
 * globs never backtrack on a client's (or an upstream's) string. Before, `file://{name}.{ext}`
 * against 80,000 dots and a slash took 11 s of the hub's only thread.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { matchTemplate } from '../../src/registry/uri-template.js';
import { globMatch } from '../../src/registry/glob.js';
import { Registry } from '../../src/registry/registry.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { honestClient, scratch, type Scratch } from './helpers.js';

const PLUGIN = String.raw`
mcp.resource("file://{name}.{ext}", { name = "files" }, function(p)
  return "name=" .. p.name .. " ext=" .. p.ext
end)
mcp.tool("ok", {}, function() return "ok" end)
`;

function timed<T>(fn: () => T): { value: T; ms: number } {
  const t0 = performance.now();
  const value = fn();
  return { value, ms: performance.now() - t0 };
}

describe('URI templates match in linear time', () => {
  it('keeps the greedy values a regex would give', () => {
    assert.deepEqual(matchTemplate('file://{name}.{ext}', 'file://a.b.c'), {
      name: 'a.b',
      ext: 'c',
    });
    assert.deepEqual(matchTemplate('note://{id}', 'note://42'), { id: '42' });
    assert.deepEqual(matchTemplate('note://{id}', 'note://a%20b'), { id: 'a b' });
    assert.equal(matchTemplate('note://{id}', 'note://a/b'), undefined);
    assert.deepEqual(matchTemplate('x://{a}{b}', 'x://ab'), { a: 'ab', b: '' });
    assert.deepEqual(matchTemplate('x://{a}/{b}?q', 'x://1/2?q'), { a: '1', b: '2' });
    assert.equal(matchTemplate('x://{a}/{b}?q', 'x://1/2?r'), undefined);
    assert.deepEqual(matchTemplate('fixed://uri', 'fixed://uri'), {});
    assert.equal(matchTemplate('fixed://uri', 'fixed://uri2'), undefined);
  });

  it('answers adversarial URIs within a bound that grows linearly', () => {
    const dots = `file://${'.'.repeat(80_000)}/`;
    const a = timed(() => matchTemplate('file://{name}.{ext}', dots));
    assert.equal(a.value, undefined);
    const many = timed(() => matchTemplate('x://{a}.{b}.{c}.{d}', `x://${'.'.repeat(80_000)}#`));
    assert.equal(many.value, undefined);
    const ok = timed(() => matchTemplate('file://{name}.{ext}', `file://${'.'.repeat(80_000)}x`));
    assert.equal(ok.value?.ext, 'x');
    // The regex took 11 s on the first; linear work is a few ms even on a loaded machine.
    assert.ok(a.ms < 500 && many.ms < 500 && ok.ms < 500, `${a.ms} ${many.ms} ${ok.ms} ms`);
  });
});

describe('a URI against many templates', () => {
  it('is turned away by each template without a pass over the URI', () => {
    // 2,000 templates sharing a head, as an upstream's catalogue can: a 4 KB URI that matched
    // none cost a pass and its tables per template, 537 ms of the hub's thread per read.
    const registry = new Registry();
    for (let i = 1; i <= 2000; i++)
      registry.addResource('p', {
        uriTemplate: `repo://{owner}/{repo}/k${i}`,
        name: `r${i}`,
        handler: () => Promise.resolve({ contents: [] }),
      });
    const hostile = `repo://${'a'.repeat(4080)}`;
    const t = timed(() => {
      for (let i = 0; i < 10; i++) assert.equal(registry.resolveResource(hostile), undefined);
    });
    assert.ok(t.ms < 200, `ten reads took ${t.ms.toFixed(0)} ms`);
    // What does match still resolves, with its values.
    const found = registry.resolveResource('repo://moonhub/hub/k1999');
    assert.equal(found?.entry.name, 'r1999');
    assert.deepEqual(found?.params, { owner: 'moonhub', repo: 'hub' });
    assert.equal(registry.resolveResource('repo://moonhub/hub/k2001'), undefined);
  });
});

describe('globs match without backtracking', () => {
  it('matches like a shell glob', () => {
    assert.ok(globMatch('get-*', 'get-sum'));
    assert.ok(globMatch('*', ''));
    assert.ok(globMatch('a?c', 'abc'));
    assert.ok(!globMatch('a?c', 'ac'));
    assert.ok(globMatch('*.*.x', 'a.b.x'));
    assert.ok(!globMatch('*.*.x', 'a.b.y'));
    assert.ok(globMatch('a*b*c', 'aXXbYYc'));
    assert.ok(!globMatch('a.b', 'aXb'), 'a dot is literal');
  });

  it('stays fast on a glob and name built to make a regex backtrack', () => {
    const glob = `${'a*'.repeat(20)}b`;
    const name = 'a'.repeat(20_000);
    const r = timed(() => globMatch(glob, name));
    assert.equal(r.value, false);
    assert.ok(r.ms < 1000, `${r.ms} ms`);
  });
});

describe('a hostile resources/read against a real hub', () => {
  let dir: Scratch;
  let hub: MoonhubProcess;
  before(async () => {
    dir = scratch();
    dir.write('plugins/files.lua', PLUGIN);
    // The URI bound (limits.subscriptions.uri_length, 4096) would refuse the hostile URI before
    // it reaches the template matcher; raised here so the matcher itself is what is measured.
    const config = dir.write(
      'moonhub.yaml',
      'plugins: { dirs: [plugins] }\nlimits: { subscriptions: { uri_length: 100000 } }\n',
    );
    hub = await startMoonhub(['--config', config, '--no-watch']);
  });
  after(async () => {
    await hub.stop();
    dir.remove();
  });

  it('answers quickly, and another client is served meanwhile', async () => {
    const honest = await honestClient(hub.url, 'ok');
    const { client } = await connectHttpClient(hub.url, 'legacy');
    try {
      const good = await client.readResource({ uri: 'file://report.final.txt' });
      assert.match(JSON.stringify(good.contents), /name=report\.final ext=txt/);
      const t0 = performance.now();
      for (let i = 0; i < 5; i++) {
        await assert.rejects(
          client.readResource({ uri: `file://${'.'.repeat(80_000)}/` }),
          /not found|Unknown resource|-32002/i,
        );
      }
      const ms = performance.now() - t0;
      assert.ok(ms < 5000, `five hostile reads took ${ms} ms (11 s each before)`);
    } finally {
      await client.close();
    }
    const h = await honest.stop();
    assert.equal(h.errors, 0);
    assert.ok(h.count > 0);
    assert.ok(h.max < 1000, `the honest client waited up to ${h.max} ms`);
    assert.ok(hub.alive());
  });
});
