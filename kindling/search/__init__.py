"""Retrieval: the three tiers (pins, current summary, ranked candidates) over the index.

- request: SearchRequest, the options of one search, checked once where it is built;
- fts_query: typed or pasted text -> an FTS5 expression that cannot fail;
- coverage: the idf-weighted share of a query's terms a text holds;
- rank: a candidate's score from its parts (relevance, episode, recency);
- context: matchContext, a bounded window around the first match;
- retrieve: pins, the current summary, scored candidates and the token budget.
"""
