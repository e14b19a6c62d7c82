/**
 * Drives a `moonhub serve --stdio` child: writes JSON-RPC lines with a fixed number in flight
 * (like wrk's connections) and times each answer, for the stdio row.
 */
import type { Readable, Writable } from 'node:stream';
import { LEGACY_VERSION, spec } from './rpc.js';
import { percentile, type Sample } from './stats.js';

export class StdioDriver {
  private buf = '';
  private readonly waiting = new Map<number, (line: string) => void>();
  private nextId = 1;

  constructor(
    private readonly input: Writable,
    output: Readable,
  ) {
    output.on('data', (d: Buffer) => this.onData(d.toString('utf8')));
  }

  private onData(text: string): void {
    this.buf += text;
    let nl: number;
    while ((nl = this.buf.indexOf('\n')) !== -1) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      // Answers start with {"jsonrpc":"2.0","id":N: read the id without parsing the whole line.
      const m = /"id":(\d+)/.exec(line.slice(0, 40));
      if (!m) continue;
      const id = Number(m[1]);
      const done = this.waiting.get(id);
      if (done !== undefined) {
        this.waiting.delete(id);
        done(line);
      }
    }
  }

  /** Sends a request (`prefix + id + suffix` as in RequestSpec) and resolves with its line. */
  request(prefix: string, suffix: string): Promise<string> {
    const id = this.nextId++;
    return new Promise((res) => {
      this.waiting.set(id, res);
      this.input.write(prefix + id + suffix + '\n');
    });
  }

  /** initialize + notifications/initialized: the 2025 session every stdio load runs in. */
  async initialize(): Promise<void> {
    const init = spec('', 'legacy', 'initialize', {
      protocolVersion: LEGACY_VERSION,
      capabilities: {},
      clientInfo: { name: 'moonhub-bench', version: '1.0.0' },
    });
    await this.request(init.prefix, init.suffix);
    this.notify('{"jsonrpc":"2.0","method":"notifications/initialized"}');
  }

  notify(line: string): void {
    this.input.write(line + '\n');
  }

  /** Keeps `inFlight` requests going for `seconds`; latencies from write to answer line. */
  async load(prefix: string, suffix: string, inFlight: number, seconds: number): Promise<Sample> {
    const end = performance.now() + seconds * 1000;
    const lat: number[] = [];
    let errors = 0;
    const worker = async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const line = await this.request(prefix, suffix);
        lat.push(performance.now() - t0);
        if (!line.includes('"result"') || line.includes('"isError":true')) errors++;
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: inFlight }, worker));
    const elapsed = (performance.now() - t0) / 1000;
    return {
      rps: lat.length / elapsed,
      p50Ms: percentile(lat, 50),
      p99Ms: percentile(lat, 99),
      requests: lat.length,
      errors,
    };
  }
}
