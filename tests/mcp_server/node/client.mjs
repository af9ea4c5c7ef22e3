// The TypeScript SDK client (@modelcontextprotocol/sdk, the one Claude Desktop, Cursor and the MCP
// Inspector build on) calling semcat's tools, driven by tests/mcp_server/test_mcp_clients.py.
//
//   node client.mjs '{"transport": "stdio", "command": "...", "args": [...], "env": {...},
//                     "calls": [{"name": "describe_table", "arguments": {...}}, ...]}'
//   node client.mjs '{"transport": "http", "url": "http://127.0.0.1:PORT/mcp", "token": "...", "calls": [...]}'
//
// Prints one JSON object: the negotiated protocol version, the listed tool names, and per call either the
// result as the SDK returned it ({isError, content, structuredContent, _meta}) or {thrown: message} when
// the SDK threw (e.g. "Structured content does not match the tool's output schema"). The tools are listed
// first, so the SDK knows every output schema and validates each result against it, as clients do.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const spec = JSON.parse(process.argv[2]);
const transport = spec.transport === "stdio"
  ? new StdioClientTransport({ command: spec.command, args: spec.args, env: spec.env, stderr: "ignore" })
  : new StreamableHTTPClientTransport(new URL(spec.url), {
      requestInit: spec.token ? { headers: { Authorization: `Bearer ${spec.token}` } } : {},
    });
const client = new Client({ name: "semcat-ts-sdk-test", version: "1.0.0" });
const out = { results: [] };
try {
  await client.connect(transport);
  out.protocolVersion = transport.protocolVersion ?? null;
  out.serverVersion = client.getServerVersion();
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  for (const call of spec.calls) {
    try {
      const r = await client.callTool({ name: call.name, arguments: call.arguments });
      out.results.push({ name: call.name, isError: r.isError ?? false, content: r.content,
                         structuredContent: r.structuredContent ?? null, _meta: r._meta ?? null });
    } catch (e) {
      out.results.push({ name: call.name, thrown: String(e && e.message ? e.message : e) });
    }
  }
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
