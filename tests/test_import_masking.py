"""An import masks each bundle entity exactly as capture would; masking remembers short strings."""

from __future__ import annotations

import entities
from hypothesis import given, settings
from hypothesis import strategies as st

from kindling.bundle.inbound import inbound_entity
from kindling.masking import mask_json, mask_scope_ids, mask_text
from kindling.masking.gate import json_might_hold_secret, might_hold_secret
from kindling.masking.text import mask_text as mask_text_ungated

SECRETS = [
    "password=hunter22x",
    "Authorization: Bearer abcdefghijklmnopqrstu",
    "ghp_" + "a" * 36,
    "token",
    "src/auth.ts",
    "pаssword: s3cr3tvalue",  # a Cyrillic a
    "",
    "plain words only",
]
texts = st.one_of(st.sampled_from(SECRETS), st.text(max_size=30))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), texts),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=8,
)


def _any_secret(value: object) -> bool:
    """The gate over a JSON value, each string looked at afresh, to compare with the fast one."""
    if isinstance(value, str):
        return might_hold_secret.__wrapped__(value)
    if isinstance(value, dict):
        return any(
            (isinstance(k, str) and might_hold_secret.__wrapped__(k)) or _any_secret(v)
            for k, v in value.items()
        )
    if isinstance(value, (list, tuple)):
        return any(_any_secret(v) for v in value)
    return False


@settings(max_examples=100)
@given(json_values)
def test_a_remembered_gate_answer_is_the_answer(value):
    for _ in range(2):  # the second time from what the gate remembers
        assert json_might_hold_secret(value) == _any_secret(value)


@settings(max_examples=100)
@given(texts)
def test_a_remembered_masked_text_is_the_masked_text(text):
    for _ in range(2):  # the second time from what masking remembers
        assert mask_text(text) == mask_text_ungated(text)


@settings(max_examples=200)
@given(texts, json_values, st.dictionaries(st.sampled_from(["sessionId", "repoId"]), texts))
def test_an_observation_is_masked_as_the_masking_functions_mask_it(content, provenance, scope):
    observation = entities.observation(1, content, provenance={"v": provenance}, scopeIds=scope)
    for _ in range(2):  # the second time from what masking remembers
        masked, count = inbound_entity("observations", observation)
        text, n = mask_text(content)
        prov, m = mask_json({"v": provenance})
        ids, s = mask_scope_ids(scope)
        assert count == n + m + s
        assert masked["scopeIds"] == ids
        assert masked["content"] == (text if n + m else content)
        assert masked["provenance"] == (prov if n + m else {"v": provenance})
        if not count:
            assert masked is observation  # the bundle's own dict: one copy held
