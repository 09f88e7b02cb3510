"""Agent tools: evidence numbering (`ledger`) and citation checking (`citations`).

Agent tools number every piece of evidence they return so a draft answer can cite it as `[n]`,
and `check_citations` verifies those citations against what the session actually returned.
"""
