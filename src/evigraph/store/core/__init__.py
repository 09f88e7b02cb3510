"""The store's backend-neutral core: what both backends share, written once.

Schema names, row-to-record conversion, the graph index built from the rows, and the checks and
plans of merges, decisions, traces and integrity, each against a small reader (`reader.Rows`) or a
`write_plan.WritePlan` the backend runs. A backend (`store/embedded`, `store/falkordb`) keeps only
its dialect and how it sequences writes; it imports from here and never from another backend.
The Cypher lexer and guard rules are the sibling package `store/cypher`.
"""
