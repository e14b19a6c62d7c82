/**
 * `enum` in constant time per value. ajv compares a value with every allowed one in turn, so a
 * schema's enum of 1,000 codes on the items of a client's array of 90,000 held the hub's thread
 * 1.6 s on the loaded machine (O(items x enum)); the client chooses the array. Here the allowed
 * values are put in a Set once per schema: primitives as themselves, objects and arrays as
 * canonical JSON (so key order does not matter, as for ajv's deep equality). The error is ajv's.
 */
import type { ErrorObject } from 'ajv';
import { canonicalJson } from './unique-items.js';

type EnumValidate = ((data: unknown) => boolean) & { errors?: Partial<ErrorObject>[] };

interface KeywordHost {
  removeKeyword(keyword: string): unknown;
  addKeyword(definition: {
    keyword: string;
    schemaType: 'array';
    errors: true;
    compile: (allowed: unknown[]) => EnumValidate;
  }): unknown;
}

function isComposite(v: unknown): v is object {
  return typeof v === 'object' && v !== null;
}

/** The validator of one `enum`: membership in a Set made once. */
export function enumValidator(allowed: readonly unknown[]): EnumValidate {
  const primitives = new Set<unknown>();
  const composites = new Set<string>();
  for (const v of allowed) {
    if (isComposite(v)) composites.add(canonicalJson(v));
    else primitives.add(v);
  }
  const validate: EnumValidate = (data) => {
    const found = isComposite(data)
      ? composites.size > 0 && composites.has(canonicalJson(data))
      : primitives.has(data);
    if (found) return true;
    validate.errors = [
      {
        keyword: 'enum',
        params: { allowedValues: allowed },
        message: 'must be equal to one of the allowed values',
      },
    ];
    return false;
  };
  return validate;
}

/** Replaces an ajv instance's `enum` with the Set-based one. */
export function linearEnum(ajv: KeywordHost): void {
  ajv.removeKeyword('enum');
  ajv.addKeyword({ keyword: 'enum', schemaType: 'array', errors: true, compile: enumValidator });
}
