// paced: answers every message until the host stops it, slowly, for the
// cluster's idempotency test (cmd/toolhostd): it first calls the tool
// "delivered" of its tooling "pace" with {"content": ...}, so that the
// test counts what every instance on every host was given, then streams
// each word of the content (with the spaces after it) as a reply delta,
// calling "pause" after each (the tool sets the pace), and ends the reply
// with "": the reply's text is the content.
import { get } from 'toolhost:agent/tooling@0.3.0';
import { agent, serve } from '../../../../sdk/js/toolhost.js';

export const run = agent(() => {
  const pace = get('pace');
  const n = serve((msg, reply) => {
    pace.callToolBlocking('delivered', JSON.stringify({ content: msg.content }));
    for (const w of msg.content.split(/(?<= )/)) {
      if (w === '') continue;
      reply.delta(w);
      pace.callToolBlocking('pause', '{}');
    }
    return '';
  });
  return `answered ${n} messages`;
});
