"""What every server of the toolkit shares, below its transports: the transport-free backend that
runs a tool call and shapes its result, the per-client sessions and their evidence ledgers, the
result shaping and failure kinds, and the forwarding of reads to the process that holds a
knowledge base's file. MCP (stdio, HTTP) and REST both sit on it; it imports neither."""
