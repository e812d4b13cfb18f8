"""``acp-proxy mcp``: an MCP server that lets an agent look into recordings (docs/api.md)."""
