/** A scratch folder a test writes its plugins and config into, removed when the test is done. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface Scratch {
  dir: string;
  /** Writes `text` to `rel` (folders made as needed); returns the absolute path. */
  write(rel: string, text: string): string;
  remove(): void;
}

export function scratch(prefix = 'moonhub-rel-'): Scratch {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    write(rel, text) {
      const path = join(dir, rel);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, text);
      return path;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
