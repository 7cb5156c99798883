// durable: a tool loop for the durable-agent tests (cmd/toolhostd). Its
// input is {"tool": T, "n": N}: it calls T of its tooling "count" N times
// with {"i": i}, keeping each result's text (or, for a failed call, its
// error as "code: message"), then calls "done" with {"results": [...]}
// and returns the results joined by ",". Each result ends with the wall
// clock's time and a random number (" t=... r=..."), as the guest read
// them, and is logged ("result i: ...") as it is made.
import { get } from 'toolhost:agent/tooling@0.3.0';
import { write as log } from 'toolhost:agent/log@0.3.0';
import { agent, errorText } from '../../../../sdk/js/toolhost.js';

export const run = agent((input) => {
  const { tool, n } = JSON.parse(input);
  const count = get('count');
  const results = [];
  for (let i = 1; i <= n; i++) {
    try {
      const r = count.callToolBlocking(tool, JSON.stringify({ i }));
      const v = JSON.parse(r.value);
      results.push((v.content ?? []).map((x) => x.text).join('') + ` t=${Date.now()} r=${Math.random()}`);
    } catch (e) {
      results.push(errorText(e));
    }
    log('info', `result ${i}: ${results[i - 1]}`);
  }
  count.callToolBlocking('done', JSON.stringify({ results }));
  return results.join(',');
});
