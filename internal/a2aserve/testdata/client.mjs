// The official JavaScript A2A SDK's client (@a2a-js/sdk, A2A 1.0) against
// toolhostd's A2A endpoint: node client.mjs AGENT_URL TOKEN [legacy].
// "legacy" makes it speak A2A 0.3 through its compat layer, to the card's
// 0.3 interface (0.3 has no ListTasks). It prints one JSON line of what it
// saw, task states by name.
import { Role, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

const [url, token, mode] = process.argv.slice(2);
const legacy = mode === 'legacy';
const authFetch = (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set('Authorization', `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch, legacyCompat: { enabled: legacy } })],
}));
const resolver = new DefaultAgentCardResolver({ legacyCompat: { enabled: legacy } });
const card = await resolver.resolve(`${url}/.well-known/agent-card.json`, '');
if (legacy) {
  card.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === '0.3');
}
const client = await factory.createFromAgentCard(card);

const msg = (text, contextId = '') => ({
  message: {
    messageId: crypto.randomUUID(), role: Role.ROLE_USER, contextId,
    parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain' }],
  },
});
const text = (parts) => parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const summary = (t) => ({
  id: t.id, contextId: t.contextId, state: taskStateToJSON(t.status.state),
  reply: (t.artifacts ?? []).map((a) => text(a.parts)).join(''),
  status: t.status.message ? text(t.status.message.parts) : '',
});
const taskOf = (r) => (r.payload ? r.payload.value : r);

const out = { card: { name: card.name, description: card.description, streaming: card.capabilities?.streaming } };
out.send = summary(taskOf(await client.sendMessage(msg('words a b', 'js1'))));
out.stream = [];
for await (const ev of client.sendMessageStream(msg('words x y', 'js2'))) {
  const { $case, value } = ev.payload;
  if ($case === 'artifactUpdate') out.stream.push(`artifact:${text(value.artifact.parts)}`);
  else if ($case === 'statusUpdate') out.stream.push(`status:${taskStateToJSON(value.status.state)}`);
  else out.stream.push(`${$case}:${taskStateToJSON(value.status.state)}`);
}
out.get = summary(await client.getTask({ id: out.send.id }));
if (!legacy) {
  // ts-proto requests are whole objects: an absent status would be sent
  // as UNRECOGNIZED.
  const all = { tenant: '', contextId: 'js1', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '' };
  out.list = (await client.listTasks(all)).tasks.map((t) => t.id);
  try {
    await client.listTasks({ contextId: 'js1' });
    out.badFilter = 'listed';
  } catch (e) {
    out.badFilter = `${e.reason} ${e.envelopeCode}`;
  }
}
out.fail = summary(taskOf(await client.sendMessage(msg('fail'))));
const held = taskOf(await client.sendMessage({ ...msg('hold'), configuration: { returnImmediately: true } }));
for (let i = 0; ; i++) {
  const t = await client.getTask({ id: held.id });
  if (t.status.state === TaskState.TASK_STATE_WORKING) break;
  if (i === 1000) throw new Error(`task ${held.id} never worked: ${taskStateToJSON(t.status.state)}`);
  await new Promise((r) => setTimeout(r, 5));
}
out.cancel = summary(await client.cancelTask({ id: held.id }));
try {
  await client.getTask({ id: 'no-such-task' });
  out.unknownTask = 'found';
} catch (e) {
  out.unknownTask = e.constructor.name;
}
console.log(JSON.stringify(out));
