// echo: an agent you can talk to without a model. It answers every message
// until the host stops it, streaming the reply word by word:
//
//   toolhostd send echo "hello there"       # -> echo: hello there
//
// The reply is "echo: " and the content, and " (session S)" after it when
// the message has a session; each word comes as a reply delta. Input
// (optional): a prefix instead of "echo: ".
import { write } from 'toolhost:agent/log@0.3.0';
import { agent, serve } from '../../sdk/js/toolhost.js';

export const run = agent((input) => {
  const prefix = input && input.trim() ? input : 'echo: ';
  write('info', 'echo: ready for messages');
  const n = serve((msg, reply) => {
    reply.delta(prefix);
    for (const w of msg.content.split(/(?<= )/)) if (w !== '') reply.delta(w);
    return msg.session === null ? '' : ` (session ${msg.session})`;
  });
  return `echoed ${n} messages`;
});
