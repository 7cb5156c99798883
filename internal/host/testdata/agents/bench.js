// bench: makes tool calls in a loop and times each one with
// performance.now(), for the host's benchmarks. Input: JSON {"tooling",
// "tool", "arguments", "n", "batch"}: n rounds; a round is one
// call-tool-blocking when batch is 0 or absent, else batch call-tool calls
// followed by recv until all their envelopes are in. Output: JSON
// {"ns": [per-round nanoseconds], "errors": count}.
import { get } from 'toolhost:agent/tooling@0.2.0';
import { recv } from 'toolhost:agent/inbox@0.2.0';

export function run(input) {
  const o = JSON.parse(input);
  const t = get(o.tooling);
  const args = JSON.stringify(o.arguments ?? {});
  const ns = [];
  let errors = 0;
  for (let i = 0; i < o.n; i++) {
    const start = performance.now();
    if (!o.batch) {
      t.callToolBlocking(o.tool, args);
    } else {
      const waiting = new Set();
      for (let j = 0; j < o.batch; j++) waiting.add(t.callTool(o.tool, args));
      while (waiting.size > 0) {
        const e = recv(30000);
        if (e === undefined) throw `timed out with ${waiting.size} results missing`;
        if (e.event.tag !== 'tool-result') errors++;
        waiting.delete(e.id);
      }
    }
    ns.push(Math.round((performance.now() - start) * 1e6));
  }
  return JSON.stringify({ ns, errors });
}
