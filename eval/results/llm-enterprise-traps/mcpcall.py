"""Call one tool of an MCP server over streamable HTTP and print the answer.

    python mcpcall.py URL list                      # the server's instructions and its tools
    python mcpcall.py URL TOOL '{"arg": "value"}'   # one call; prints the text and the JSON result
"""
import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, tool: str, args: dict) -> None:
    async with Client(streamable_http_client(url, http_client=httpx2.AsyncClient(timeout=120))) as c:
        if tool == "list":
            init = getattr(c, "server_info", None)
            print("INSTRUCTIONS:", getattr(c, "instructions", None) or getattr(init, "instructions", ""))
            for t in (await c.list_tools()).tools:
                print(f"\n## {t.name}: {t.description}\n  input: {json.dumps(t.input_schema.get('properties', {}))}")
            return
        r = await c.call_tool(tool, args)
        for part in r.content:
            print(getattr(part, "text", part))
        if r.structured_content is not None:
            print(json.dumps(r.structured_content, ensure_ascii=False))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], json.loads(sys.argv[3]) if len(sys.argv) > 3 else {})
