"""`/mcp`: the registry's skills for MCP hosts (Streamable HTTP, the Skills Extension
`io.modelcontextprotocol/skills`, and a `resolve` tool), served with the `mcp` package.

- `catalog`: what is served (entries, file bytes, directories), read through the read model;
- `server`: the MCP server, its Skills Extension and the handlers that call `catalog`;
- `views`: the Django view: bearer token and scope, then one request through the transport.
"""
