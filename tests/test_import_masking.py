"""An import masks each bundle entity exactly as capture would, remembering short strings."""

from __future__ import annotations

import entities
from hypothesis import given, settings
from hypothesis import strategies as st

from kindling.bundle import inbound
from kindling.bundle.inbound import Masker
from kindling.masking import mask_json, mask_scope_ids, mask_text
from kindling.secret_gate import json_might_hold_secret

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


@settings(max_examples=300)
@given(json_values)
def test_the_remembered_gate_answers_as_the_gate_does(value):
    masker = Masker()
    assert masker.might_hold_secret(value) == json_might_hold_secret(value)
    assert masker.might_hold_secret(value) == json_might_hold_secret(value)  # remembered


@settings(max_examples=200)
@given(texts, json_values, st.dictionaries(st.sampled_from(["sessionId", "repoId"]), texts))
def test_an_observation_is_masked_as_the_masking_functions_mask_it(content, provenance, scope):
    masker = Masker()
    observation = entities.observation(1, content, provenance={"v": provenance}, scopeIds=scope)
    for _ in range(2):  # the second time from what it remembers
        masked, count = masker.entity("observations", observation)
        text, n = mask_text(content)
        prov, m = mask_json({"v": provenance})
        ids, s = mask_scope_ids(scope)
        assert count == n + m + s
        assert masked["scopeIds"] == ids
        assert masked["content"] == (text if n + m else content)
        assert masked["provenance"] == (prov if n + m else {"v": provenance})
        if not count:
            assert masked is observation  # the bundle's own dict: one copy held


def test_what_is_remembered_stays_bounded(monkeypatch):
    monkeypatch.setattr(inbound, "REMEMBERED", 3)
    masker = Masker()
    for i in range(10):
        assert masker.text(f"token{i}") == mask_text(f"token{i}")
        masker.might_hold_secret(f"value {i}")
    assert len(masker._texts) <= 3 and len(masker._gates) <= 3


def test_long_text_is_masked_every_time_without_being_remembered():
    masker = Masker()
    text = "password=hunter22x " + "x" * inbound.SHORT
    assert masker.text(text) == mask_text(text) and masker.text(text)[1] == 1
    assert not masker._texts
