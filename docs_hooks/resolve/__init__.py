"""The resolve stage: the code index, every reference resolved to one statement span, the call graph, the review lock (runs no code)."""
