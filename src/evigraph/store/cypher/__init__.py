"""Free-form Cypher's guard, shared by every store: what an agent's query may be before an engine
sees it.

Layers, each independent of the next:

1. `lexer`: the query's tokens exactly as the engines' grammars read them, or a refusal.
2. `bounds`: how big and how deep it may be, and how fast its values may grow, so no engine stalls
   parsing it, overflows its stack or builds values without limit (both engines parse outside
   their time limits; the bounds are bisected engine limits with a wide margin).
3. `statement`: one read-only statement, no hidden name, only the knowledge graph's labels, a
   LIMIT on every final RETURN; each backend adds its dialect's functions and procedures.
4. The backend's own check of the engine's plan (an allow-list of operators and tables), then the
   run: in a worker process on the embedded file, under the server's memory cap and timeout on
   FalkorDB; `rows` bounds what comes back.
"""
