"""SearchRequest: one search checked once, where it is built, and read by every layer."""

from __future__ import annotations

import dataclasses

import pytest

from kindling.errors import ValidationError
from kindling.memory import Memory
from kindling.model import MAX_COUNT
from kindling.search.request import SearchRequest, as_request


def test_defaults():
    request = SearchRequest.checked("auth")
    assert request == SearchRequest("auth")
    assert (request.scope, request.kinds, request.since) == ({}, None, None)
    assert (request.max_results, request.max_tokens) == (10, None)
    assert not request.include_redacted and not request.explain


def test_normalised_once():
    scope = {"sessionId": "s1"}
    request = SearchRequest.checked(
        "a\udcffb", scope=scope, kinds=["error", "command", "error"], since=5
    )
    assert request.query == "a?b"  # a lone surrogate cannot reach SQLite
    assert request.kinds == ("error", "command")
    scope["repoId"] = "later"
    assert request.scope == {"sessionId": "s1"}  # a copy: the caller's dict may change
    assert SearchRequest.checked("x", kinds=[]).kinds is None  # no kinds: every kind
    assert SearchRequest.checked("x", kinds=()).kinds is None


def test_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SearchRequest.checked("x").max_results = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"kinds": ["shout"]}, "invalid kind 'shout': use one of tool_call, "),
        ({"kinds": "error"}, "kinds must be a list"),
        ({"max_results": -1}, f"max results must be an integer from 0 to {MAX_COUNT}"),
        ({"max_results": True}, "max results"),
        ({"max_results": MAX_COUNT + 1}, "max results"),
        ({"max_tokens": -5}, "max tokens must be an integer"),
        ({"max_tokens": 2.5}, "max tokens"),
        ({"since": "yesterday"}, "since must be an integer from 0 to"),
        ({"since": -1}, "since"),
        ({"scope": {"branch": "x"}}, "scope.branch is not a scope field"),
        ({"scope": {"sessionId": " "}}, "scope.sessionId must be a non-empty string"),
        ({"scope": "s1"}, "scope must be an object"),
    ],
)
def test_bad_options_are_one_validation_error(options, message):
    with pytest.raises(ValidationError, match=message):
        SearchRequest.checked("x", **options)


def test_every_bad_option_is_named_in_the_one_message():
    with pytest.raises(ValidationError) as err:
        SearchRequest.checked(None, kinds=["shout"], max_results=-1, since="x")  # type: ignore[arg-type]
    message = str(err.value)
    assert "\n" not in message
    for part in ("query must be a string", "invalid kind 'shout'", "max results", "since"):
        assert part in message


def test_as_request_takes_either_form():
    request = SearchRequest.checked("x", max_results=3)
    assert as_request(request, {}) is request
    assert as_request("x", {"max_results": 3}) == request
    with pytest.raises(TypeError, match="max_results"):
        as_request(request, {"max_results": 4})


def test_memory_search_takes_a_request_or_a_query_with_options(store_dir, monkeypatch):
    monkeypatch.setenv("KINDLING_NOW", "1750416064123")  # the same recency for both calls
    with Memory(store_dir) as memory:
        memory.log("token expired in the auth middleware", kind="error")
        memory.log("auth retried", kind="command")
        by_request = memory.search(SearchRequest.checked("auth", kinds=["error"]))
        by_options = memory.search("auth", kinds=["error"])
    assert by_request == by_options
    assert [c["entity"]["kind"] for c in by_request["candidates"]] == ["error"]


def test_bad_options_fail_before_any_sync(store_dir, monkeypatch):
    with Memory(store_dir) as memory:
        monkeypatch.setattr(memory, "sync", lambda *a, **k: pytest.fail("synced"))
        with pytest.raises(ValidationError, match="max results"):
            memory.search("x", max_results=-1)
