// router: an agent that asks two others. For each message it receives it
// sends the same content to each agent it routes to (in the same session,
// if the message has one), and streams their replies into its own as they
// come, one after the other, each under the agent's name:
//
//   [echo] echo: the question
//   [assistant-service] the model's answer
//
// A reply that fails is merged as "error: code: message"; the router's
// reply fails only when every agent's did. The config must let it send
// (its sends_to) and let them take its messages (their accepts
// "agent:router"). Input (JSON, every key optional): {"agents": [...],
// "timeout": seconds per reply}.
import { cancel } from 'toolhost:agent/messages@0.3.0';
import { write } from 'toolhost:agent/log@0.3.0';
import { agent, errorText, HostError, Inbox, send } from '../../sdk/js/toolhost.js';

const defaults = { agents: ['echo', 'assistant-service'], timeout: 300 };

// merge streams each asked agent's reply into reply, in order; it returns
// how many failed. An error of reply itself (the router's sender
// cancelled) is thrown.
function merge(inbox, asked, reply, timeoutMs) {
  let failed = 0;
  asked.forEach((a, i) => {
    reply.delta(`${i > 0 ? '\n' : ''}[${a.name}] `);
    if (a.error === undefined) {
      let streamed = 0;
      try {
        const whole = inbox.replyOf(a.id, (d) => {
          streamed += d.length;
          reply.delta(d);
        }, timeoutMs);
        if (whole === null) a.error = inbox.shutdown ? 'the router is stopping' : 'no reply in time';
        else if (whole.length > streamed) reply.delta(whole.slice(streamed)); // the reply's own text, after its deltas
        a.done = whole !== null;
      } catch (e) {
        if (!(e instanceof HostError)) throw e; // not the agent's error: reply.delta's (the router's own message)
        a.error = errorText(e);
        a.done = true;
      }
    }
    if (a.error !== undefined) {
      failed++;
      reply.delta(`error: ${a.error}`);
      write('warn', `router: ${a.name}: ${a.error}`);
    }
  });
  return failed;
}

function route(o) {
  const inbox = new Inbox();
  const n = inbox.serve((msg, reply) => {
    // Every agent is asked at once; the replies are read in order, the
    // later ones' envelopes held meanwhile.
    const asked = o.agents.map((name) => {
      try {
        return { name, id: send(name, msg.content, msg.session) };
      } catch (e) {
        return { name, error: errorText(e) };
      }
    });
    let failed;
    try {
      failed = merge(inbox, asked, reply, o.timeout * 1000);
    } finally {
      for (const a of asked) if (a.id !== undefined && !a.done) cancel(a.id);
    }
    if (failed === asked.length) throw `every agent failed (${asked.map((a) => a.name).join(', ')})`;
    return '';
  });
  return `routed ${n} messages to ${o.agents.join(', ')}`;
}

// agent (sdk/js) makes whatever escapes run's err: a host error as
// "code: message".
export const run = agent((input) => route({ ...defaults, ...(input && input.trim() ? JSON.parse(input) : {}) }));
