/**
 * `node dist/bench/wake-cost.js`: what one thread crossing costs on this machine, the unit of
 * every hop moonhub makes (hub ↔ plugin worker, hub ↔ execute worker, script ↔ plugin worker).
 * Prints, at p50 and p90 over a bounded number of samples:
 * - the round trip main → worker → main of a small message, the worker idle in between;
 * - what `postMessage` itself costs its sender when the receiver sleeps (the wake-up), and for a
 *   second message right after (the receiver already woken);
 * - the same `postMessage` on a channel within one thread (copy only, no wake-up);
 * - the round trip when the worker polls its port instead of sleeping (a bounded spin's best
 *   case), and when a hint woke it 50 µs ahead (docs/performance.md, "execute, session 13").
 * Used in docs/performance.md ("Session 7 ... what one thread crossing costs") to bound what a design with N crossings per
 * call can reach; absolute figures depend on the machine (a VM's idle vCPU is slow to wake).
 */
import { MessageChannel, Worker } from 'node:worker_threads';
import { percentile } from './lib/stats.js';

const SAMPLES = 2000;
const ECHO = `
const { parentPort } = require('node:worker_threads');
let n = 0;
parentPort.on('message', (m) => { if (m.answer !== false || ++n % 2 === 0) parentPort.postMessage(1); });
`;

/** Answers every message but the hints (0); or, with `spin`, polls its port without sleeping. */
const POLLED = `
const { workerData, receiveMessageOnPort } = require('node:worker_threads');
const { port, spin } = workerData;
const handle = (m) => { if (m !== 0) port.postMessage(m); };
if (!spin) port.on('message', handle);
else {
  const loop = () => {
    const end = performance.now() + 5;
    while (performance.now() < end) { const g = receiveMessageOnPort(port); if (g) handle(g.message); }
    setImmediate(loop);
  };
  loop();
}`;

interface Quantiles {
  p50: number;
  p90: number;
}

function quantiles(ms: number[]): Quantiles {
  return { p50: percentile(ms, 50) * 1000, p90: percentile(ms, 90) * 1000 };
}

const show = (label: string, q: Quantiles) =>
  console.log(`${label.padEnd(56)} p50 ${q.p50.toFixed(1)} µs, p90 ${q.p90.toFixed(1)} µs`);

/** Sends one message (or two), waits for the answer, sleeps ~1 ms so the worker idles, repeats. */
function measure(
  worker: Worker,
  pair: boolean,
): Promise<{ rt: number[]; first: number[]; second: number[] }> {
  const rt: number[] = [];
  const first: number[] = [];
  const second: number[] = [];
  let sentAt = 0;
  return new Promise((resolve) => {
    const send = () => {
      sentAt = performance.now();
      worker.postMessage({ type: 'run', run: rt.length, answer: !pair });
      first.push(performance.now() - sentAt);
      if (pair) {
        const t = performance.now();
        worker.postMessage({ type: 'run', run: rt.length, answer: false });
        second.push(performance.now() - t);
      }
    };
    const onAnswer = () => {
      rt.push(performance.now() - sentAt);
      if (rt.length < SAMPLES) setTimeout(send, 1);
      else {
        worker.off('message', onAnswer);
        resolve({ rt, first, second });
      }
    };
    worker.on('message', onAnswer);
    send();
  });
}

function sameThread(): number[] {
  const { port1, port2 } = new MessageChannel();
  port2.on('message', () => {});
  const out: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t = performance.now();
    port1.postMessage({ type: 'run', run: i });
    out.push(performance.now() - t);
  }
  port1.close();
  return out;
}

const busyWait = (us: number) => {
  const end = performance.now() + us / 1000;
  while (performance.now() < end);
};

/**
 * Round trips after ~1 ms idle to a worker that polls (`spin`) or sleeps; `hintUs`: a hint goes
 * that long before the message (the sender busy meanwhile, as a script worker is between run start
 * and its calls). Returns the round trips and what posting the hint cost its sender.
 */
async function ahead(spin: boolean, hintUs: number): Promise<{ rt: number[]; hint: number[] }> {
  const { port1, port2 } = new MessageChannel();
  const w = new Worker(POLLED, {
    eval: true,
    workerData: { port: port2, spin },
    transferList: [port2],
  });
  await new Promise((r) => setTimeout(r, 300));
  const rt: number[] = [];
  const hint: number[] = [];
  await new Promise<void>((resolve) => {
    let t0 = 0;
    const send = () => {
      if (hintUs > 0) {
        const t = performance.now();
        port1.postMessage(0);
        hint.push(performance.now() - t);
        busyWait(hintUs);
      }
      t0 = performance.now();
      port1.postMessage(1);
    };
    port1.on('message', () => {
      rt.push(performance.now() - t0);
      if (rt.length < SAMPLES) setTimeout(send, 1);
      else resolve();
    });
    send();
  });
  await w.terminate();
  port1.close();
  return { rt, hint };
}

async function main(): Promise<void> {
  const single = new Worker(ECHO, { eval: true });
  await new Promise((r) => setTimeout(r, 300));
  const a = await measure(single, false);
  await single.terminate();
  const double = new Worker(ECHO, { eval: true });
  await new Promise((r) => setTimeout(r, 300));
  const b = await measure(double, true);
  await double.terminate();
  show('round trip main → idle worker → main', quantiles(a.rt));
  show('postMessage to a sleeping worker (sender side)', quantiles(b.first));
  show('postMessage right after, worker awake (sender side)', quantiles(b.second));
  show('postMessage on a channel within one thread', quantiles(sameThread()));
  show('round trip, the worker polling its port (no sleep)', quantiles((await ahead(true, 0)).rt));
  const hinted = await ahead(false, 50);
  show('round trip, the worker woken by a hint 50 µs ahead', quantiles(hinted.rt));
  show('postMessage of that hint (sender side)', quantiles(hinted.hint));
}

await main();
