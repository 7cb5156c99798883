// fanout: queues N calls with call-tool, queues one slow call and cancels it,
// then collects every result from the inbox by UUID. Input (JSON, optional):
// {"tooling", "tool", "arguments", "n", "slow": {"tool", "arguments"},
// "every": seconds}. With "every" it runs as a daemon's agent: it logs each
// round's summary, waits that long and fans out again, until shutdown.
import { get } from 'toolhost:agent/tooling@0.3.0';
import { recv } from 'toolhost:agent/inbox@0.3.0';
import { write } from 'toolhost:agent/log@0.3.0';
import { agent } from '../../sdk/js/toolhost.js';

const defaults = {
  tooling: 'everything',
  tool: 'echo',
  arguments: { message: 'fan' },
  n: 10,
  slow: { tool: 'trigger-long-running-operation', arguments: { duration: 60, steps: 1 } },
};

function main(input) {
  const o = input && input.trim() ? { ...defaults, ...JSON.parse(input) } : defaults;
  if (!(o.every > 0)) return fanout(o);
  for (let round = 1; ; round++) {
    // A shutdown that arrives mid-round ends the agent the same way as one
    // that arrives between rounds: the host is stopping it, nothing failed.
    // The round it cuts short counts (its calls reached the server).
    let summary;
    try {
      summary = fanout(o);
    } catch (e) {
      if (e instanceof Shutdown) return `stopped after ${round} rounds`;
      throw e;
    }
    write('info', `round ${round}: ${summary}`);
    if (shutdownWithin(o.every * 1000)) return `stopped after ${round} rounds`;
  }
}

// Shutdown is thrown by fanout when the host's shutdown envelope arrives
// before every result has.
class Shutdown {
  constructor(missing) { this.missing = missing; }
  toString() { return `shut down with ${this.missing} results missing`; }
}

// shutdownWithin waits up to ms for the host's shutdown envelope; envelopes
// of calls already collected or cancelled are skipped.
function shutdownWithin(ms) {
  const end = Date.now() + ms;
  for (let left = ms; left > 0; left = end - Date.now()) {
    const env = recv(left);
    if (env == null) return false; // none: undefined (componentize-js) or null (componentize-qjs)
    if (env.event.tag === 'shutdown') return true;
  }
  return false;
}

function fanout(o) {
  const t = get(o.tooling);
  const waiting = new Map();
  for (let i = 0; i < o.n; i++) {
    const args = { ...o.arguments, message: `${o.arguments.message ?? ''}#${i}` };
    waiting.set(t.callTool(o.tool, JSON.stringify(args)), i);
  }
  let cancelled = 'none';
  if (o.slow) {
    const slow = t.callTool(o.slow.tool, JSON.stringify(o.slow.arguments ?? {}));
    const openBefore = t.isOpen(slow);
    const ok = t.cancel(slow);
    cancelled = `open=${openBefore} cancel=${ok} open-after=${t.isOpen(slow)}`;
  }
  let results = 0;
  let errors = 0;
  while (waiting.size > 0) {
    const env = recv(30000);
    if (env == null) { // none: undefined (componentize-js) or null (componentize-qjs)
      throw `timed out with ${waiting.size} results missing`;
    }
    if (env.event.tag === 'shutdown') {
      throw new Shutdown(waiting.size);
    }
    if (!waiting.has(env.id)) {
      throw `unexpected envelope ${env.id} (${env.event.tag})`;
    }
    waiting.delete(env.id);
    if (env.event.tag === 'tool-result') results++;
    else errors++;
  }
  t[Symbol.dispose]();
  write('info', `fanout: ${results} results, ${errors} errors`);
  return `calls=${o.n} results=${results} errors=${errors} slow: ${cancelled}`;
}

// agent (sdk/js) makes whatever main throws run's err: a host error as
// "code: message".
export const run = agent(main);
