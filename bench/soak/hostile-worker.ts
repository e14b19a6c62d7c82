/**
 * The hostile clients run on a worker thread of their own, so their work does not delay the
 * honest clients' event loop (which would show as hub latency that is not the hub's).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { HOSTILE } from './hostile.js';
import { Tally, type Target } from './wire.js';

interface Data {
  target: Target;
  seconds: number;
  only: string[] | undefined;
}

const { target, seconds, only } = workerData as Data;
const until = Date.now() + seconds * 1000;
const classes = HOSTILE.filter((c) => only === undefined || only.includes(c.name));
const tallies = new Map(classes.map((c) => [c.name, new Tally()]));
const errors: Record<string, string> = {};

await Promise.all(
  classes.map((c) =>
    c
      .run({ t: target, tally: tallies.get(c.name)!, running: () => Date.now() < until })
      .catch((err: unknown) => {
        errors[c.name] = String(err);
      }),
  ),
);
parentPort!.postMessage({
  classes: classes.map((c) => ({
    name: c.name,
    what: c.what,
    outcomes: tallies.get(c.name)!.toJSON(),
    error: errors[c.name],
  })),
});
