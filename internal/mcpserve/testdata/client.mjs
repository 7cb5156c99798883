// The official TypeScript MCP SDK's client against toolhostd's MCP
// endpoint: node client.mjs URL [TOKEN]. It prints one JSON line of
// results, then waits for notifications/tools/list_changed and prints the
// tools listed after it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, token] = process.argv.slice(2);
const opts = token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : undefined;
const transport = new StreamableHTTPClientTransport(new URL(url), opts);
const client = new Client({ name: 'toolhostd-test', version: '0' });
let changed;
const listChanged = new Promise((resolve) => { changed = resolve; });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
await client.connect(transport);

const text = (r) => r.content.map((c) => c.text).join('');
const out = { tools: (await client.listTools()).tools.map((t) => ({ name: t.name, description: t.description, required: t.inputSchema.required })) };
const progress = [];
out.reply = text(await client.callTool({ name: 'talk', arguments: { message: 'words a b c' } }, undefined,
  { onprogress: (p) => progress.push(p.message) }));
out.progress = progress;
const failed = await client.callTool({ name: 'talk', arguments: { message: 'fail' } });
out.fail = { isError: failed.isError === true, text: text(failed) };
out.session = text(await client.callTool({ name: 'talk', arguments: { message: 'session' } }));
out.sessionId = transport.sessionId;
try {
  const r = await client.callTool({ name: 'nobody', arguments: { message: 'x' } });
  out.unknown = `a result: ${JSON.stringify(r)}`;
} catch (e) {
  out.unknown = `${e.code}: ${e.message}`;
}
console.log(JSON.stringify(out));

await listChanged;
console.log(JSON.stringify((await client.listTools()).tools.map((t) => t.name)));
await client.close();
