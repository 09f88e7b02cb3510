"""The `evigraph` command: thin verbs over `KnowledgeBase`, named as its methods are.

`main` dispatches; each family module (`ingest`, `reads`, `maintenance`, ...) declares its verbs,
their options (from the registries and input models) and the functions that run them, and
`parser` lists the families; `options` holds what their parsers share, `common` what the verbs
share when they run (exit codes, printing, the specs their flags name). Only argparse, the strategy
registries and the small display helpers load up front, so `evigraph --help` answers at once; each
verb imports what it needs when it runs.
"""

from evigraph.cli.main import main

__all__ = ["main"]
