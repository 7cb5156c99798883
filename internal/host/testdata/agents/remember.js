import { open } from 'wasi:keyvalue/store@0.2.0-draft2';
import { increment } from 'wasi:keyvalue/atomics@0.2.0-draft2';
import { agent, utf8 } from '../../../../sdk/js/toolhost.js';

export const run = agent((input) => {
  const notes = open('notes');                // this agent's bucket
  notes.set('last', utf8(input));
  const runs = increment(notes, 'runs', 1);   // atomic across instances and hosts
  return `run ${runs}`;
});
