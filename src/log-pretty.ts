/**
 * Human log lines from pino's JSON: `12:03:04.512 INFO  plugin loaded plugin=notes tools=5`,
 * coloured by level on a terminal. A small formatter of our own instead of pino-pretty: it needs
 * no worker thread, writes synchronously (a crash still gets its last line out) and adds no
 * dependency tree.
 */
import { writeSync } from 'node:fs';

const LEVELS: Record<number, [string, string]> = {
  10: ['TRACE', '\x1b[90m'],
  20: ['DEBUG', '\x1b[36m'],
  30: ['INFO ', '\x1b[32m'],
  40: ['WARN ', '\x1b[33m'],
  50: ['ERROR', '\x1b[31m'],
  60: ['FATAL', '\x1b[35m'],
};
const RESET = '\x1b[0m';
const DIM = '\x1b[2m';
const SKIP = new Set(['level', 'time', 'msg', 'app', 'pid', 'hostname', 'err']);

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
}

/** One JSON log line as text (exported for tests). */
export function formatLine(json: string, color: boolean): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : json + '\n';
  }
  const [name, tint] = LEVELS[rec.level as number] ?? ['LOG  ', ''];
  const time = new Date(typeof rec.time === 'number' ? rec.time : Date.now())
    .toISOString()
    .slice(11, 23);
  const fields = Object.entries(rec)
    .filter(([k]) => !SKIP.has(k))
    .map(([k, v]) => `${k}=${value(v)}`)
    .join(' ');
  const err = rec.err as { message?: string; stack?: string } | undefined;
  const stack = err ? `\n  ${(err.stack ?? err.message ?? '').split('\n').join('\n  ')}` : '';
  const msg = typeof rec.msg === 'string' ? rec.msg : '';
  if (!color) return `${time} ${name} ${msg}${fields ? ' ' + fields : ''}${stack}\n`;
  return `${DIM}${time}${RESET} ${tint}${name}${RESET} ${msg}${fields ? ` ${DIM}${fields}${RESET}` : ''}${stack}\n`;
}

/** A pino destination writing formatted lines to a file descriptor, synchronously. */
export function prettyDestination(fd: number, color: boolean): { write(line: string): void } {
  return { write: (line) => void writeSync(fd, formatLine(line, color)) };
}
