"""The `evigraph` command: thin verbs over `KnowledgeBase`, named as its methods are.

`main` dispatches; `parser` builds every verb's options from the registries and input models;
`common` holds what the verbs share (exit codes, printing, the specs their flags name); each
other module is one family of verbs. Only argparse and the small display helpers load up front,
so `evigraph --help` answers at once; each verb imports what it needs when it runs.
"""

from evigraph.cli.main import main

__all__ = ["main"]
