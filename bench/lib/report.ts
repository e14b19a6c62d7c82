/**
 * Turning results into what people read: the console table, the README's markdown table, the
 * SVG chart of ratios (drawn here, no chart library), and the baseline check for CI.
 */
import type { RowResult } from './rows.js';

const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)} %` : '');
const times = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : '');
const num = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '');

/** The reason a row was skipped, cut to fit a table cell (latest.json keeps it whole). */
function shortNa(na: string): string {
  return na.length > 60 ? `${na.slice(0, 57)}...` : na;
}

interface Cell {
  head: string;
  get: (r: RowResult, sdkBest: number) => string;
}

const COLUMNS: Cell[] = [
  { head: 'row', get: (r) => r.label },
  { head: 'req/s', get: (r) => (r.na ? shortNa(r.na) : num(r.rps)) },
  {
    head: 'req/s ratio',
    get: (r) =>
      r.na
        ? ''
        : r.kind === 'throughput'
          ? `${pct(r.rpsRatio)} of ${r.ref}`
          : `${times(r.rpsRatio)} ${r.ref}`,
  },
  {
    head: '× SDK best',
    get: (r, best) => (r.na || r.kind !== 'throughput' || !best ? '' : times(r.rps / best)),
  },
  { head: 'CPU µs/req', get: (r) => (r.na ? '' : num(r.cpuUs, 1)) },
  {
    head: 'CPU ratio',
    get: (r) => (r.na ? '' : r.kind === 'throughput' ? pct(r.cpuRatio) : times(1 / r.cpuRatio)),
  },
  { head: 'p50 ms', get: (r) => (r.na ? '' : num(r.p50Ms, 2)) },
  { head: 'p50 ratio', get: (r) => (r.na ? '' : times(r.p50Ratio)) },
  { head: 'p99 ms', get: (r) => (r.na ? '' : num(r.p99Ms, 2)) },
  { head: 'p99 ratio', get: (r) => (r.na ? '' : times(r.p99Ratio)) },
  { head: 'RSS MB', get: (r) => (r.na ? '' : num(r.rssMB, 1)) },
  { head: 'RSS ratio', get: (r) => (r.na ? '' : times(r.rssRatio)) },
  { head: 'errors', get: (r) => (r.na ? '' : String(r.errors)) },
];

function sdkBest(rows: RowResult[]): number {
  return Math.max(0, ...rows.filter((r) => r.id.startsWith('sdk-') && !r.na).map((r) => r.rps));
}

export function consoleTable(rows: RowResult[]): string {
  const best = sdkBest(rows);
  const cells = rows.map((r) => COLUMNS.map((c) => c.get(r, best)));
  const widths = COLUMNS.map((c, i) =>
    Math.max(c.head.length, ...cells.map((row) => row[i]!.length)),
  );
  const line = (vals: string[]) =>
    vals.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  return [
    line(COLUMNS.map((c) => c.head)),
    line(widths.map((w) => '-'.repeat(w))),
    ...cells.map(line),
  ].join('\n');
}

export function markdownTable(rows: RowResult[]): string {
  const best = sdkBest(rows);
  const head = `| ${COLUMNS.map((c) => c.head).join(' | ')} |`;
  const sep = `| ${COLUMNS.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`;
  const body = rows.map((r) => `| ${COLUMNS.map((c) => c.get(r, best)).join(' | ')} |`);
  return [head, sep, ...body].join('\n');
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A horizontal bar chart of each throughput row's req/s as a share of the bare server. */
export function ratioChart(rows: RowResult[], title: string): string {
  const bars = rows.filter((r) => r.kind === 'throughput' && r.id !== 'bare');
  // Wide enough for the longest label at ~6.5 px a character (12 px sans-serif).
  const labelW = Math.max(200, Math.ceil(Math.max(...bars.map((r) => r.label.length)) * 6.5) + 16);
  const barW = 420;
  const rowH = 26;
  const top = 48;
  const height = top + bars.length * rowH + 40;
  const width = labelW + barW + 90;
  const x = (ratio: number) => labelW + Math.max(0, Math.min(1, ratio)) * barW;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${esc(title)}</text>`,
    `<text x="10" y="36" fill="#555">req/s as a share of the bare node:http server measured in the same run (100 %)</text>`,
  ];
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    parts.push(
      `<line x1="${x(t)}" y1="${top - 4}" x2="${x(t)}" y2="${height - 30}" stroke="#ddd"/>`,
      `<text x="${x(t)}" y="${height - 16}" text-anchor="middle" fill="#555">${t * 100} %</text>`,
    );
  }
  bars.forEach((r, i) => {
    const y = top + i * rowH;
    const ours = r.id.startsWith('hub');
    parts.push(`<text x="${labelW - 8}" y="${y + 16}" text-anchor="end">${esc(r.label)}</text>`);
    if (r.na) {
      parts.push(`<text x="${labelW + 4}" y="${y + 16}" fill="#999">${esc(r.na)}</text>`);
      return;
    }
    parts.push(
      `<rect x="${labelW}" y="${y + 4}" width="${(x(r.rpsRatio) - labelW).toFixed(1)}" height="${rowH - 8}" fill="${ours ? '#2b6cb0' : '#a0aec0'}"/>`,
      `<text x="${(x(r.rpsRatio) + 4).toFixed(1)}" y="${y + 16}">${pct(r.rpsRatio)}</text>`,
    );
    const target = r.id === 'hub-2026' ? 0.6 : r.id === 'hub-2025' ? 0.5 : undefined;
    if (target !== undefined) {
      parts.push(
        `<line x1="${x(target)}" y1="${y + 1}" x2="${x(target)}" y2="${y + rowH - 1}" stroke="#c53030" stroke-width="2" stroke-dasharray="3,2"/>`,
      );
    }
  });
  parts.push(
    `<text x="${labelW}" y="${height - 2}" fill="#c53030">dashed red: goal of issue 17 (2026-07-28 ≥ 60 %, 2025 sessions ≥ 50 %)</text>`,
    '</svg>',
  );
  return parts.join('\n') + '\n';
}

/** Ratios CI guards, per row of ours: req/s and CPU per request, each as a share of the ref. */
export type Baseline = Record<string, { rps: number; cpu: number }>;

/**
 * Rows measured in --quick but not guarded (none now). `hub-proxied` is guarded since session 5
 * (bench/baseline.json: req/s 0.40 and CPU 0.55 of hub-2026, under the 43-65 % and 61-64 % that
 * quick runs measured on the loaded machine; the code before measured 37-40 % by CPU).
 */
const UNGUARDED: ReadonlySet<string> = new Set<string>();

export function baselineOf(rows: RowResult[]): Baseline {
  const out: Baseline = {};
  for (const r of rows) {
    if (UNGUARDED.has(r.id)) continue;
    // Our rows, each against its reference (execute against one plain call); not a reference itself.
    if (r.na || r.id === r.ref || !(r.id.startsWith('hub') || r.id === 'execute')) continue;
    if (Number.isFinite(r.rpsRatio) && Number.isFinite(r.cpuRatio))
      out[r.id] = { rps: r.rpsRatio, cpu: r.cpuRatio };
  }
  return out;
}

export interface Regression {
  id: string;
  ratio: 'rps' | 'cpu';
  now: number;
  recorded: number;
}

/** The ratios that fell more than `tolerance` below the recorded ones. */
export function regressions(rows: RowResult[], baseline: Baseline, tolerance = 0.25): Regression[] {
  const out: Regression[] = [];
  for (const [id, recorded] of Object.entries(baseline)) {
    const r = rows.find((x) => x.id === id);
    if (r === undefined || r.na) continue;
    const now = { rps: r.rpsRatio, cpu: r.cpuRatio };
    for (const ratio of ['rps', 'cpu'] as const) {
      if (!Number.isFinite(now[ratio]) || recorded[ratio] === undefined) continue;
      if (now[ratio] < recorded[ratio] * (1 - tolerance))
        out.push({ id, ratio, now: now[ratio], recorded: recorded[ratio] });
    }
  }
  return out;
}
