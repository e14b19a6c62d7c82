/**
 * A node:cluster worker for the IPC bus test: counts what it hears on one channel; on `go`
 * publishes that many messages; reports when it has heard them all. On `confirm`, publishes one
 * with `publishConfirmed` and says when the primary acknowledged it.
 */
import { IpcBus } from '../../src/cluster/ipc-bus.js';

const bus = new IpcBus();
const heard: string[] = [];
let expected = 3;
bus.subscribe('list_changed', (d) => {
  heard.push((d as { n: string }).n);
  if (heard.length === expected) setTimeout(() => process.send!({ report: heard }), 100);
});
process.on('message', (m: { go?: number; expect?: number; confirm?: boolean }) => {
  if (typeof m?.expect === 'number') expected = m.expect;
  if (typeof m?.go === 'number') {
    expected = m.go;
    for (let i = 0; i < m.go; i++) bus.publish('list_changed', { n: `n${i}` });
  }
  // publishConfirmed: resolves once the primary has relayed it (its acknowledgement).
  if (m?.confirm === true)
    bus.publishConfirmed('list_changed', { n: 'confirmed' }).then(
      () => process.send!({ confirmed: true }),
      (err: Error) => process.send!({ confirmed: false, error: err.message }),
    );
});
process.send!({ ready: true });
