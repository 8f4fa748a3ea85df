"""Retrieval: the three tiers (pins, current summary, ranked candidates) over the index.

- fts_query: typed text -> an FTS5 expression that cannot fail;
- retrieve: pins, the current summary, scored candidates and the token budget.
"""
