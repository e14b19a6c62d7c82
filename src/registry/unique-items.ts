/**
 * `uniqueItems` in linear time. ajv compares the items of an array that may hold objects or
 * arrays pair by pair (O(n²) deep compares): 16,000 small objects in one tool call's arguments
 * held the hub's thread 8.7 s, and the client chooses the array. Here each item is written once
 * as canonical JSON (object keys sorted, so key order does not matter, as it does not for ajv's
 * deep equality) and looked up in a Map. The error is ajv's, naming the same pair of items: the
 * last item that repeats an earlier one, and the last such earlier one.
 */
import type { ErrorObject } from 'ajv';

interface KeywordHost {
  removeKeyword(keyword: string): unknown;
  addKeyword(definition: {
    keyword: string;
    type: 'array';
    schemaType: 'boolean';
    errors: true;
    validate: UniqueValidate;
  }): unknown;
}

type UniqueValidate = ((schema: boolean, data: unknown[]) => boolean) & {
  errors?: Partial<ErrorObject>[];
};

/** One JSON value as text that is equal for deep-equal values (keys sorted at every level). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

/** The pair ajv reports for a repeated item ([later, earlier] indexes), or undefined. */
export function repeatedPair(items: readonly unknown[]): [number, number] | undefined {
  const last = new Map<string, number>();
  let found: [number, number] | undefined;
  for (let k = 0; k < items.length; k++) {
    const key = canonicalJson(items[k]);
    const before = last.get(key);
    if (before !== undefined) found = [k, before];
    last.set(key, k);
  }
  return found;
}

const validate: UniqueValidate = (unique, data) => {
  if (!unique) return true;
  const pair = repeatedPair(data);
  if (pair === undefined) return true;
  const [i, j] = pair;
  validate.errors = [
    {
      keyword: 'uniqueItems',
      params: { i, j },
      message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
    },
  ];
  return false;
};

/** Replaces an ajv instance's `uniqueItems` with the linear one. */
export function linearUniqueItems(ajv: KeywordHost): void {
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({
    keyword: 'uniqueItems',
    type: 'array',
    schemaType: 'boolean',
    errors: true,
    validate,
  });
}
