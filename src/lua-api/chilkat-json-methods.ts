/**
 * chilkat.JsonObject's methods as called from Lua (chilkat.ts dispatches them): arguments
 * checked, the document (chilkat-json.ts) asked, and `last_method_success` / `last_error_text`
 * kept for the methods that can fail.
 */
import { LuaArgumentError } from '../lua/errors.js';
import { LuaMulti, type HostCall } from '../lua/state.js';
import { boolArg, intArg, strArg } from './chilkat-args.js';
import type { JsonDoc } from './chilkat-json.js';

type Json = Parameters<JsonDoc['set']>[1];

const fail = (text: string) => new LuaMulti([undefined, text]);

export function jsonMethod(doc: JsonDoc, name: string, args: unknown[], call: HostCall): unknown {
  const path = () => strArg(args, call, 1, name);
  const ok = (text: string) => {
    doc.lastMethodSuccess = true;
    doc.lastErrorText = `${name}: Success`;
    return text;
  };
  const failed = (text: string) => {
    doc.lastMethodSuccess = false;
    doc.lastErrorText = `${name}: ${text}`;
    return fail(doc.lastErrorText);
  };
  const update = (v: Json) => {
    const at = path();
    return doc.set(at, v) ? (ok(''), true) : failed(`cannot create the path '${at}'`);
  };
  switch (name) {
    case 'load': {
      const problem = doc.load(strArg(args, call, 1, name));
      return problem ? failed(problem) : (ok(''), true);
    }
    case 'emit':
      return doc.emit();
    case 'string_of':
      return doc.stringOf(path());
    case 'int_of':
      return doc.intOf(path());
    case 'bool_of':
      return doc.boolOf(path());
    case 'has_member':
      return doc.get(path()) !== undefined;
    case 'size_of_array':
      return doc.sizeOfArray(path());
    case 'update_string':
      return update(strArg(args, call, 2, name));
    case 'update_int':
      return update(intArg(args, call, 2, name));
    case 'update_bool':
      return update(boolArg(args, call, 2, name));
    case 'update_null':
      return update(null);
    case 'update_new_object':
      return update({});
    case 'update_new_array':
      return update([]);
    case 'append_string':
      doc.append(path(), strArg(args, call, 2, name));
      return true;
    case 'append_int':
      doc.append(path(), intArg(args, call, 2, name));
      return true;
    case 'append_bool':
      doc.append(path(), boolArg(args, call, 2, name));
      return true;
    case 'delete':
      return doc.delete(path());
    case 'name_at':
      return doc.nameAt(intArg(args, call, 1, name));
    case 'string_at':
      return doc.stringAt(intArg(args, call, 1, name));
    case 'type_at':
      return doc.typeAt(intArg(args, call, 1, name));
  }
  throw new LuaArgumentError(`chilkat.JsonObject has no method '${name}'`);
}
