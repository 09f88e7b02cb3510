"""Agent tools: the registry, bounded inputs and results of what agents call.

Tools number every piece of evidence they return (the ledger, `evigraph.evidence`) so a draft
answer can cite it as `[n]`, and the `check_citations` tool verifies those citations
(`evigraph.evidence.citations`) against what the session actually returned.
"""
