/**
 * A size quota on the files under one folder (a plugin's `/source/tmp/`, an `execute` run's
 * scratch folder): what the folder holds on disk, counted once at the first write and kept up
 * to date by each write after, so a script writing in a loop cannot fill the disk.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Each file is charged at least one disk block, so a million empty files are not free. */
const MIN_FILE_BYTES = 4096;
/** Entries looked at when counting a folder that is already there (bounded, like everything). */
const MAX_SCAN = 100_000;

export class WriteQuota {
  private used: number | undefined;

  constructor(
    private readonly folder: () => string | undefined,
    readonly limit: number,
    private readonly key: string,
  ) {}

  /**
   * Charges a write of `size` bytes to `disk` (replacing whatever file is there); returns why it
   * is refused, or undefined when it fits (and is then counted).
   */
  charge(disk: string, size: number): string | undefined {
    const used = (this.used ??= this.scan());
    const old = lstatSync(disk, { throwIfNoEntry: false });
    const before = old?.isFile() ? Math.max(old.size, MIN_FILE_BYTES) : 0;
    const after = used - before + Math.max(size, MIN_FILE_BYTES);
    if (after > this.limit) {
      return `write quota exceeded: /source/tmp/ may hold at most ${this.limit} bytes (${this.key}); it holds ${used}, this write needs ${size}`;
    }
    this.used = after;
    return undefined;
  }

  private scan(): number {
    const root = this.folder();
    if (root === undefined) return 0;
    let total = 0;
    let seen = 0;
    const stack = [root];
    while (stack.length > 0 && seen < MAX_SCAN) {
      const dir = stack.pop() as string;
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      for (const name of names) {
        if (++seen > MAX_SCAN) break;
        const path = join(dir, name);
        const st = lstatSync(path, { throwIfNoEntry: false });
        if (st?.isDirectory()) stack.push(path);
        else if (st?.isFile()) total += Math.max(st.size, MIN_FILE_BYTES);
      }
    }
    return total;
  }
}
