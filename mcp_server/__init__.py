"""semcat's servers: the FastAPI HTTP API for the engine and the `semcat` CLI (MCP tools come next)."""
