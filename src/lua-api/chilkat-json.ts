/**
 * chilkat.JsonObject's data and methods (LUA_API §4): a JSON object that keeps its members in
 * order, addressed by paths with `.` and 0-based `[n]`, where `[i]`, `[j]`, `[k]` take the
 * object's index properties. The Lua class around it lives in chilkat-lua.ts.
 */

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObj = { [k: string]: Json };

export class JsonDoc {
  root: JsonObj = {};
  i = 0;
  j = 0;
  k = 0;
  emitCompact = true;
  lastErrorText = '';
  lastMethodSuccess = true;

  /** Splits `a.b[2].c` (with i/j/k resolved) into keys and indexes. */
  private parse(path: string): (string | number)[] | undefined {
    const out: (string | number)[] = [];
    const re = /([^.[\]]+)|\[([^\]]*)\]|(\.)/g;
    let m: RegExpExecArray | null;
    let last = 0;
    while ((m = re.exec(path))) {
      if (m.index !== last) return undefined;
      last = re.lastIndex;
      if (m[1] !== undefined) out.push(m[1]);
      else if (m[2] !== undefined) {
        const ix = m[2].trim();
        const n = ix === 'i' ? this.i : ix === 'j' ? this.j : ix === 'k' ? this.k : Number(ix);
        if (!Number.isInteger(n) || n < 0) return undefined;
        out.push(n);
      }
    }
    return last === path.length ? out : undefined;
  }

  get(path: string): Json | undefined {
    const parts = this.parse(path);
    if (!parts) return undefined;
    let cur: Json | undefined = this.root;
    for (const p of parts) {
      if (cur === null || typeof cur !== 'object') return undefined;
      cur = Array.isArray(cur)
        ? typeof p === 'number'
          ? cur[p]
          : undefined
        : typeof p === 'string'
          ? Object.prototype.hasOwnProperty.call(cur, p)
            ? cur[p]
            : undefined
          : undefined;
    }
    return cur;
  }

  /** Sets a value at a path, creating objects (and arrays for `[n]`) on the way. */
  set(path: string, value: Json): boolean {
    const parts = this.parse(path);
    if (!parts || parts.length === 0) return false;
    let cur: Json = this.root;
    for (let n = 0; n < parts.length; n++) {
      const p = parts[n]!;
      const isLast = n === parts.length - 1;
      const nextIsIndex = !isLast && typeof parts[n + 1] === 'number';
      if (Array.isArray(cur)) {
        if (typeof p !== 'number' || p > cur.length) return false;
        if (isLast) cur[p] = value;
        else {
          if (cur[p] === undefined || cur[p] === null || typeof cur[p] !== 'object')
            cur[p] = nextIsIndex ? [] : {};
          cur = cur[p] as Json;
        }
      } else if (cur !== null && typeof cur === 'object') {
        if (typeof p !== 'string') return false;
        if (isLast) cur[p] = value;
        else {
          const child: Json | undefined = cur[p];
          if (child === undefined || child === null || typeof child !== 'object')
            cur[p] = nextIsIndex ? [] : {};
          cur = cur[p] as Json;
        }
      } else return false;
    }
    return true;
  }

  load(text: string): string | undefined {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (err) {
      return `invalid JSON: ${(err as Error).message}`;
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v))
      return 'the JSON text is not an object';
    this.root = v as JsonObj;
    return undefined;
  }

  emit(): string {
    return this.emitCompact ? JSON.stringify(this.root) : JSON.stringify(this.root, null, 2);
  }

  stringOf(path: string): string | undefined {
    return asText(this.get(path));
  }

  intOf(path: string): number {
    const v = this.get(path);
    if (typeof v === 'number') return Math.trunc(v);
    if (typeof v === 'string' && /^\s*-?\d+/.test(v)) return parseInt(v, 10);
    if (typeof v === 'boolean') return v ? 1 : 0;
    return 0;
  }

  boolOf(path: string): boolean {
    const v = this.get(path);
    return v === true || v === 'true' || v === 1;
  }

  sizeOfArray(path: string): number {
    const v = this.get(path);
    return Array.isArray(v) ? v.length : -1;
  }

  append(name: string, value: Json): void {
    this.root[name] = value;
  }

  delete(name: string): boolean {
    if (!Object.prototype.hasOwnProperty.call(this.root, name)) return false;
    delete this.root[name];
    return true;
  }

  get size(): number {
    return Object.keys(this.root).length;
  }

  nameAt(i: number): string | undefined {
    return Object.keys(this.root)[i];
  }

  stringAt(i: number): string | undefined {
    const name = this.nameAt(i);
    return name === undefined ? undefined : asText(this.root[name]);
  }

  /** Chilkat's type codes: 1 string, 2 number, 3 object, 4 array, 5 boolean, 6 null; -1 none. */
  typeAt(i: number): number {
    const name = this.nameAt(i);
    if (name === undefined) return -1;
    return typeCode(this.root[name]);
  }
}

function asText(v: Json | undefined): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'string') return v;
  if (v === null) return 'null';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

export function typeCode(v: Json | undefined): number {
  if (v === undefined) return -1;
  if (v === null) return 6;
  if (Array.isArray(v)) return 4;
  switch (typeof v) {
    case 'string':
      return 1;
    case 'number':
      return 2;
    case 'boolean':
      return 5;
    default:
      return 3;
  }
}
