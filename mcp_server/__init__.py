"""semcat's servers: the FastAPI HTTP API for the engine, MCP tools, and the `semcat` CLI."""
