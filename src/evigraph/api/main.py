"""Running `evigraph serve`: check the network settings, open the knowledge base, serve, close.

With one knowledge base it is opened before the server listens, so a locked or damaged file is
said in one line at start, as `evigraph mcp` does; a folder's knowledge bases open on first use.
"""

from __future__ import annotations

import sys

from evigraph.api.app import build_app
from evigraph.api.catalog import Catalog
from evigraph.api.config import ServeConfig
from evigraph.api.guard import TOKEN_SOURCES
from evigraph.mcp.transports import TOKEN_ENV, check_network, check_port_free, serve_http


async def serve(config: ServeConfig) -> None:
    """Until SIGINT or SIGTERM; every knowledge base opened is closed before this returns."""
    if config.rest:
        check_network(config.host, config.token, served="the REST API", token_from=TOKEN_SOURCES)
    else:  # `evigraph mcp --db-dir`, which has no --token flag
        check_network(config.host, config.token, served="MCP", token_from=TOKEN_ENV)
    check_port_free(config.host, config.port)
    catalog = Catalog(
        config.toolkit, config.folder, secrets=(config.token,) if config.token else (), max_open=config.max_open
    )
    try:
        single = None if catalog.multi else await catalog.open(catalog.names()[0])
        print(config.describe(catalog.names()), file=sys.stderr)  # stderr, as `evigraph mcp` says it
        print(config.urls(), file=sys.stderr)
        app = build_app(config, catalog, single if config.with_mcp else None)
        await serve_http(app, config.host, config.port)
    finally:
        await catalog.close()
