"""The REST API (`evigraph serve`): the toolkit's tools over HTTP, generated from the one tool
registry as the MCP server's are, with the web UI's files at / and, on request, MCP at /mcp.

Layout: `config` (settings), `catalog` (the knowledge bases served, by name), `routes` (the
handlers), `openapi` (the generated document), `bodies` (the API's own response models),
`guard` (Host, Origin, CORS and token rules), `app` (the assembled ASGI app), `main` (serving).
"""
