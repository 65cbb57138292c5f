// Drives agentd's MCP session limits with the official TypeScript SDK
// (@modelcontextprotocol/sdk): each client connects over streamable HTTP with its own
// bearer token. Usage: node sessions.mjs URL STEPS, STEPS a JSON list of steps:
//   {"open": TOKEN}            connect client N (N counts the opens so far) with TOKEN
//   {"list": N}                list the tools on client N's session
//   {"close": N}               end client N's session (DELETE) and close it
//   {"borrow": N, "token": T}  a new client on client N's session id, with token T,
//                              listing the tools
//   {"sleep": MS}              wait
// It prints one JSON document: {"steps": [{"ok", "code", "tools"}]}, code being the
// HTTP status of a failed step (null when the failure had none) and tools the number
// of tools listed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, steps] = process.argv.slice(2);
const transport = (token, sessionId) =>
  new StreamableHTTPClientTransport(new URL(url), { sessionId, requestInit: { headers: { Authorization: `Bearer ${token}` } } });
const clients = [];
const out = [];
for (const step of JSON.parse(steps)) {
  try {
    if (step.open !== undefined) {
      const c = { client: new Client({ name: "agentd-sessions", version: "1.0.0" }), transport: transport(step.open) };
      clients.push(c);
      await c.client.connect(c.transport);
      out.push({ ok: true });
    } else if (step.list !== undefined) {
      const { tools } = await clients[step.list].client.listTools();
      out.push({ ok: true, tools: tools.length });
    } else if (step.close !== undefined) {
      const c = clients[step.close];
      await c.transport.terminateSession();
      await c.client.close();
      out.push({ ok: true });
    } else if (step.borrow !== undefined) {
      const c = new Client({ name: "agentd-borrower", version: "1.0.0" });
      await c.connect(transport(step.token, clients[step.borrow].transport.sessionId));
      const { tools } = await c.listTools();
      out.push({ ok: true, tools: tools.length });
    } else if (step.sleep !== undefined) {
      await new Promise((resolve) => setTimeout(resolve, step.sleep));
      out.push({ ok: true });
    } else {
      throw new Error(`unknown step ${JSON.stringify(step)}`);
    }
  } catch (e) {
    out.push({ ok: false, code: typeof e.code === "number" && e.code >= 100 ? e.code : null, message: String(e.message) });
  }
}
for (const c of clients) {
  await c.client.close().catch(() => {});
}
console.log(JSON.stringify({ steps: out }));
