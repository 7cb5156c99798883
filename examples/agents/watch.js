// watch: subscribes to one resource and logs each update until it has
// `count` of them or the host shuts it down. Input: a URI, or JSON
// {"tooling", "uri", "count", "toggle"}; "toggle" calls server-everything's
// toggle-subscriber-updates tool first so that it starts sending updates.
import { get } from 'toolhost:agent/tooling@0.3.0';
import { recv } from 'toolhost:agent/inbox@0.3.0';
import { write } from 'toolhost:agent/log@0.3.0';
import { agent } from '../../sdk/js/toolhost.js';

const defaults = {
  tooling: 'everything',
  uri: 'demo://resource/static/document/features.md',
  count: 3,
  toggle: true,
};

function options(input) {
  const s = (input ?? '').trim();
  if (s === '') return defaults;
  if (s.startsWith('{')) return { ...defaults, ...JSON.parse(s) };
  return { ...defaults, uri: s };
}

function main(input) {
  const o = options(input);
  const t = get(o.tooling);
  const sub = t.subscribeResource(o.uri);
  if (o.toggle) t.callToolBlocking('toggle-subscriber-updates', '{}');
  let updates = 0;
  for (;;) {
    const env = recv(undefined);
    if (env == null || env.event.tag === 'shutdown') break; // none: undefined or null (componentize-qjs)
    if (env.id !== sub) continue;
    if (env.event.tag === 'error') throw `subscription failed: ${env.event.val.code}: ${env.event.val.message}`;
    if (env.event.tag === 'resource-updated') {
      updates++;
      const c = env.event.val;
      write('info', `update ${updates}: ${c.uri} (${c.mimeType ?? 'no mime type'}, ${c.content.length} chars)`);
      if (updates >= o.count) break;
    }
  }
  t.unsubscribeResource(sub);
  return `${updates} updates of ${o.uri}`;
}

// agent (sdk/js) makes whatever main throws run's err: a host error as
// "code: message".
export const run = agent(main);
