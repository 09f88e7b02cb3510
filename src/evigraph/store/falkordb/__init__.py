"""The FalkorDB server backend: a graph on a FalkorDB server, and a local server to run one."""
