"""One search, as a single value: checked once where it is built, then read by every layer.

The CLI, the MCP server and the hooks each build a SearchRequest; Memory.search, retrieve and
the candidate tier only read it, so an option is validated in one place and means the same
thing everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kindling.errors import ValidationError
from kindling.model import (
    MAX_COUNT,
    MAX_TIMESTAMP_MS,
    is_count,
    is_timestamp,
    kind_errors,
    scope_errors,
)
from kindling.search.fts_query import clean

DEFAULT_MAX_RESULTS = 10


@dataclass(frozen=True)
class SearchRequest:
    """What to search for and how much to return. Build one with `SearchRequest.checked`:
    constructing it directly skips the checks, for callers holding values already checked."""

    query: str
    scope: dict[str, str] = field(default_factory=dict)
    kinds: tuple[str, ...] | None = None
    since: int | None = None
    max_results: int = DEFAULT_MAX_RESULTS
    max_tokens: int | None = None
    include_redacted: bool = False
    explain: bool = False

    @classmethod
    def checked(
        cls,
        query: str,
        *,
        scope: dict | None = None,
        kinds: list[str] | tuple[str, ...] | None = None,
        since: int | None = None,
        max_results: int = DEFAULT_MAX_RESULTS,
        max_tokens: int | None = None,
        include_redacted: bool = False,
        explain: bool = False,
        agent: str | None = None,
    ) -> SearchRequest:
        """A request from these options; one ValidationError naming every bad one.

        The query has anything that cannot be UTF-8 replaced; kinds lose repeats (and an empty
        list means every kind); the scope is copied, so the caller's dict can change after.
        `agent` keeps only what that agent recorded (the same as scope `agentId`).
        """
        if agent is not None:
            scope = {**(scope or {}), "agentId": agent}
        errors = []
        if not isinstance(query, str):
            errors.append("query must be a string")
        errors.extend(scope_errors(scope or {}, "scope"))
        errors.extend(kind_errors(kinds))
        if since is not None and not is_timestamp(since):
            errors.append(
                f"since must be an integer from 0 to {MAX_TIMESTAMP_MS} (epoch milliseconds)"
            )
        if not is_count(max_results):
            errors.append(f"max results must be an integer from 0 to {MAX_COUNT}")
        if max_tokens is not None and not is_count(max_tokens):
            errors.append(f"max tokens must be an integer from 0 to {MAX_COUNT}")
        if errors:
            raise ValidationError("; ".join(errors))
        return cls(
            query=clean(query),
            scope=dict(scope or {}),
            kinds=tuple(dict.fromkeys(kinds)) if kinds else None,
            since=since,
            max_results=max_results,
            max_tokens=max_tokens,
            include_redacted=bool(include_redacted),
            explain=bool(explain),
        )


def as_request(request: SearchRequest | str, options: dict[str, Any]) -> SearchRequest:
    """`request` itself, or the checked request a query and its keyword options make."""
    if not isinstance(request, SearchRequest):
        return SearchRequest.checked(request, **options)
    if options:
        raise TypeError(f"options go into the SearchRequest, not beside it: {', '.join(options)}")
    return request
