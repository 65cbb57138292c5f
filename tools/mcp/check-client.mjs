// An MCP client built with the official TypeScript SDK (@modelcontextprotocol/sdk),
// for the cross-SDK check of agentd's MCP gateway: it connects to URL over streamable
// HTTP, lists the tools, calls each tool named in CALLS (a JSON object: name ->
// arguments) in order, and prints one JSON document: {tools, calls: [{name, isError,
// text, meta}]}. Usage: node check-client.mjs URL CALLS
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, calls] = process.argv.slice(2);
const client = new Client({ name: "agentd-check-client", version: "1.0.0" });
const headers = process.env.AGENTD_TOKEN ? { Authorization: `Bearer ${process.env.AGENTD_TOKEN}` } : {};
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
const { tools } = await client.listTools();
const out = { tools: tools.map((t) => t.name), calls: [] };
for (const [name, args] of Object.entries(JSON.parse(calls))) {
  const res = await client.callTool({ name, arguments: args });
  out.calls.push({
    name,
    isError: res.isError === true,
    text: res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n"),
    meta: res._meta ?? {},
  });
}
await client.close();
console.log(JSON.stringify(out));
