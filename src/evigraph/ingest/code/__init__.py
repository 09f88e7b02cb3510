"""Code ingest: the structure of source files (modules, classes, functions and how they import,
call and inherit) as a graph, never their bodies.

`run.ingest_code` is the entry point; parsers turn one file into a `ParsedFile`, `resolve` links
names to symbols across every ingested repository, `mentions` links passages naming a symbol.
Tree-sitter grammars are imported only when a file of their language is parsed.
"""
