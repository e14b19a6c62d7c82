/**
 * The index of resource subscribers (URI → sessions) stays in step with every way a session's
 * subscriptions change: subscribe, unsubscribe, a copy re-read from a shared record (cluster
 * modes) and the session's end, after which nothing it does reaches the index again.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  newSessionState,
  resetSubscriptions,
  subscriptionsOf,
  type SessionState,
} from '../../src/server/session.js';
import { SubscriberIndex } from '../../src/server/subscriber-index.js';

function indexed(index: SubscriberIndex<SessionState>, id: string): SessionState {
  const s = newSessionState(id);
  s.subscribers = index;
  return s;
}

const holders = (index: SubscriberIndex<SessionState>, uri: string) =>
  [...(index.of(uri) ?? [])].map((s) => s.id).sort();

describe('subscriber index', () => {
  it('follows add, delete and clear, once per session and URI', () => {
    const index = new SubscriberIndex<SessionState>();
    const a = indexed(index, 'a');
    const b = indexed(index, 'b');
    subscriptionsOf(a).add('x://1').add('x://1').add('x://2');
    subscriptionsOf(b).add('x://1');
    assert.deepEqual(holders(index, 'x://1'), ['a', 'b']);
    assert.deepEqual(holders(index, 'x://2'), ['a']);
    assert.equal(subscriptionsOf(a).size, 2);

    assert.equal(subscriptionsOf(a).delete('x://1'), true);
    assert.equal(subscriptionsOf(a).delete('x://1'), false);
    assert.deepEqual(holders(index, 'x://1'), ['b']);
    subscriptionsOf(b).clear();
    assert.equal(index.of('x://1'), undefined, 'a URI nobody holds is dropped');
    assert.equal(index.size, 1);
  });

  it('a re-read copy replaces what it held; an ended session leaves and stays out', () => {
    const index = new SubscriberIndex<SessionState>();
    const s = indexed(index, 's');
    subscriptionsOf(s).add('x://old');
    resetSubscriptions(s, ['x://new', 'x://also']);
    assert.equal(index.of('x://old'), undefined);
    assert.deepEqual(holders(index, 'x://new'), ['s']);
    assert.deepEqual([...subscriptionsOf(s)].sort(), ['x://also', 'x://new']);

    resetSubscriptions(s, undefined);
    assert.equal(index.size, 0);
    // A request still in flight when the session ended may subscribe: it is not indexed.
    subscriptionsOf(s).add('x://late');
    assert.equal(index.size, 0);
  });

  it('a session without a store (stdio) keeps a plain set', () => {
    const s = newSessionState(undefined);
    subscriptionsOf(s).add('x://1');
    assert.deepEqual([...s.subscriptions!], ['x://1']);
  });
});
