/** Scratch directories of one bench run (generated plugins, wrk scripts), removed at its end. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

export function scratchDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `moonhub-bench-${name}-`));
  made.push(dir);
  return dir;
}

export function removeScratchDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
