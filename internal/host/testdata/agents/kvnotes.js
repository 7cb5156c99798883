import { open } from 'wasi:keyvalue/store@0.2.0-draft2';
import { increment, swap, Cas } from 'wasi:keyvalue/atomics@0.2.0-draft2';
import { agent, utf8, fromUtf8 } from '../../../../sdk/js/toolhost.js';

export const run = agent((input) => {
  const notes = open('notes'); // this agent's bucket "notes"
  notes.set('last-input', utf8(input));
  // An s64: a BigInt comes back under componentize-js, a number under
  // componentize-qjs; pass a number (componentize-js cannot pass a
  // negative one).
  const runs = Number(increment(notes, 'runs', 1)); // atomic across instances and hosts

  // Append to a list with compare-and-swap: retry while another writer wins.
  for (let cas = Cas.new(notes, 'log'); ; ) {
    const log = JSON.parse(fromUtf8(cas.current() ?? utf8('[]')));
    log.push(input);
    try {
      swap(cas, utf8(JSON.stringify(log)));
      break;
    } catch (e) {
      if (e.payload?.tag !== 'cas-failed') throw e;
      cas = e.payload.val; // the value as it is now
    }
  }

  // Every key, page by page, in bytewise order.
  const keys = [];
  for (let cursor; ; ) {
    const page = notes.listKeys(cursor);
    keys.push(...page.keys);
    if (page.cursor == null) break;
    cursor = page.cursor;
  }
  const log = fromUtf8(notes.get('log'));
  return `run ${runs}: ${log}; keys ${keys.join(', ')}`;
});
