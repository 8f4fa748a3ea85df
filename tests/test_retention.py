"""Retention: the committed policy, the plan it makes, and what is never retired."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from conftest import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from kindling import canonical
from kindling.errors import KindlingError
from kindling.index.episodes import of_observations
from kindling.retention import DEFAULT, gc, load_policy, make_plan, parse_policy
from kindling.retention.census import take_census
from kindling.retention.policy import DAY_MS, POLICY_NAME, Policy
from kindling.retention.record import read_records
from kindling.store import Store

T0 = 1_780_000_000_000  # 2026-05-28
MIN = 60_000


class Builder:
    """Writes sessions straight into a store: observations, a capsule, its summary."""

    def __init__(self, root: Path) -> None:
        self.store = Store.create(root)
        self.n = 0

    def oid(self) -> str:
        self.n += 1
        h = hashlib.sha256(str(self.n).encode()).hexdigest()
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"

    def session(
        self,
        name: str,
        start: int,
        steps: list[tuple[str, str | None]],
        *,
        repo: str = "acme/api",
        summary: bool = True,
        closed: bool = True,
        evidence: tuple[int, ...] = (),
    ) -> list[str]:
        """steps: (kind, subject); one minute apart from `start`. The ids, in order."""
        ids = []
        scope = {"sessionId": name, "repoId": repo}
        for i, (kind, subject) in enumerate(steps):
            ident = self.oid()
            prov = {"subject": subject} if subject else {}
            body = f"{subject or kind} output {i}\n" + "x" * 200
            if kind == "error":
                body = f"{subject} -> exit 1\nAssertionError: totals differ in invoice export"
            self.store.write(
                "observations",
                {
                    "id": ident,
                    "kind": kind,
                    "content": body,
                    "provenance": prov,
                    "ts": start + i * MIN,
                    "scopeIds": scope,
                    "redacted": False,
                },
            )
            ids.append(ident)
        cap = f"cap_{name}"
        capsule = {
            "id": cap,
            "type": "session",
            "intent": f"work of {name}",
            "status": "closed" if closed else "open",
            "openedAt": start,
            "scopeIds": scope,
            "observationIds": ids,
        }
        end = start + len(steps) * MIN
        if closed:
            capsule["closedAt"] = end
        if summary and closed:
            capsule["summaryId"] = f"sum_{name}"
            self.store.write(
                "summaries",
                {
                    "id": f"sum_{name}",
                    "content": f"what {name} found",
                    "confidence": 0.8,
                    "evidenceRefs": list(dict.fromkeys(ids[i] for i in evidence)),
                    "capsuleId": cap,
                    "ts": end,
                    "scopeIds": scope,
                },
            )
        self.store.write("capsules", capsule)
        return ids

    def pin(self, target: str, ts: int) -> None:
        self.store.write(
            "pins",
            {
                "id": f"pin_{target.replace('-', '')}",
                "targetType": "observation",
                "targetId": target,
                "reason": None,
                "createdAt": ts,
                "expiresAt": ts + 1,  # expired long ago: a pin file still protects
                "scopeIds": {},
            },
        )


def plan_of(store: Store, policy: Policy = DEFAULT):
    return make_plan(take_census(store), policy)


def retired_ids(store: Store, policy: Policy = DEFAULT) -> set[str]:
    return {r.id for r in plan_of(store, policy).retire}


# ---------------------------------------------------------------- the policy file


def test_no_policy_file_means_the_default(store_dir):
    loaded = load_policy(Store.open(store_dir))
    assert loaded == (DEFAULT, False)
    assert DEFAULT.as_json() == {
        "version": 1,
        "keepDays": 30,
        "keepSessions": 20,
        "kinds": ["command", "file_diff", "tool_call"],
    }


def test_a_committed_policy_is_read(store_dir):
    (store_dir / POLICY_NAME).write_text('{"keepDays": 7, "kinds": ["tool_call"]}')
    loaded = load_policy(Store.open(store_dir))
    assert loaded.committed
    assert loaded.policy == Policy(7, 20, ("tool_call",))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "not a JSON object"),
        ('{"keepDays": 0}', "keepDays must be an integer from 1 to 3650"),
        ('{"keepDays": 3651}', "keepDays must be an integer from 1 to 3650"),
        ('{"keepDays": 1e400}', "unreadable retention policy"),
        ('{"keepDays": 30.0}', "keepDays must be an integer"),
        ('{"keepDays": true}', "keepDays must be an integer"),
        ('{"keepDays": "30"}', "keepDays must be an integer"),
        ('{"keepSessions": -1}', "keepSessions must be an integer from 0 to 100000"),
        ('{"kinds": []}', "kinds must be a non-empty list"),
        ('{"kinds": "command"}', "kinds must be a non-empty list"),
        ('{"kinds": ["error"]}', "kinds: error observations are never retired"),
        ('{"kinds": ["message"]}', "kinds: message observations are never retired"),
        ('{"kinds": ["bogus"]}', "kinds: 'bogus' is not one of"),
        ('{"kinds": [["x"]]}', "kinds: \"['x']\" is not one of"),
        ('{"kinds": ["command", "command"]}', "each kind at most once"),
        ('{"keepDay": 30}', "unknown key 'keepDay'"),
        ('{"version": 2}', "newer than this Kindling"),
        ('{"version": 0}', "version must be a positive integer"),
        ("{not json", "unreadable retention policy"),
        ("<<<<<<< ours\n{}\n=======\n{}\n>>>>>>> theirs\n", "conflict markers"),
    ],
)
def test_a_bad_policy_is_refused_in_one_line(store_dir, text, message):
    (store_dir / POLICY_NAME).write_text(text)
    with pytest.raises(KindlingError) as caught:
        load_policy(Store.open(store_dir))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_oversized_or_symlinked_policy_is_refused(store_dir, tmp_path):
    (store_dir / POLICY_NAME).write_text('{"keepDays": 30}' + " " * 5000)
    with pytest.raises(KindlingError, match="over 4 KiB"):
        load_policy(Store.open(store_dir))
    (store_dir / POLICY_NAME).unlink()
    outside = tmp_path / "elsewhere.json"
    outside.write_text('{"keepDays": 1}')
    (store_dir / POLICY_NAME).symlink_to(outside)
    with pytest.raises(KindlingError, match="unreadable retention policy"):
        load_policy(Store.open(store_dir))


def test_kinds_are_kept_in_one_order_so_equal_policies_have_one_digest():
    a = parse_policy({"kinds": ["tool_call", "command"]})
    b = parse_policy({"kinds": ["command", "tool_call"]})
    assert a == b and a.digest == b.digest
    assert parse_policy({"keepDays": 31}).digest != DEFAULT.digest


# ---------------------------------------------------------------- the plan


def test_old_raw_output_of_a_summarised_session_is_retired(tmp_path):
    b = Builder(tmp_path / ".kindling")
    old = b.session(
        "s1", T0, [("command", "Bash: ls"), ("tool_call", "Read: a.py"), ("message", None)]
    )
    b.session("s2", T0 + 40 * DAY_MS, [("command", "Bash: ls")])
    policy = Policy(30, 0, DEFAULT.kinds)
    assert retired_ids(b.store, policy) == {old[0], old[1]}  # the message stays
    plan = plan_of(b.store, policy)
    assert plan.horizon == T0 + 40 * DAY_MS + MIN
    assert plan.cutoff == plan.horizon - 30 * DAY_MS
    sizes = {r.kind: r.size for r in plan.retire}
    assert plan.by_kind() == {
        "command": (1, sizes["command"]),
        "tool_call": (1, sizes["tool_call"]),
    }
    assert sizes["command"] == b.store.path_for("observations", old[0]).stat().st_size


def test_old_is_measured_from_the_newest_entity_not_the_clock(tmp_path):
    b = Builder(tmp_path / ".kindling")
    ids = b.session("s1", T0, [("command", "Bash: ls")])
    policy = Policy(30, 0, DEFAULT.kinds)
    assert retired_ids(b.store, policy) == set()  # nothing newer: nothing is old
    b.session("s2", T0 + 29 * DAY_MS, [("message", None)])
    assert retired_ids(b.store, policy) == set()
    b.session("s3", T0 + 31 * DAY_MS, [("message", None)])
    assert retired_ids(b.store, policy) == {ids[0]}


def test_the_newest_sessions_of_each_repository_are_kept(tmp_path):
    b = Builder(tmp_path / ".kindling")
    api = b.session("a1", T0, [("command", "Bash: ls")], repo="acme/api")
    web = b.session("w1", T0, [("command", "Bash: ls")], repo="acme/web")
    b.session("a2", T0 + 90 * DAY_MS, [("command", "Bash: ls")], repo="acme/api")
    # a2 is api's newest session; w1 is web's: with keepSessions=1 only a1's output is old.
    assert retired_ids(b.store, Policy(30, 1, DEFAULT.kinds)) == {api[0]}
    assert retired_ids(b.store, Policy(30, 0, DEFAULT.kinds)) == {api[0], web[0]}
    assert retired_ids(b.store, Policy(30, 2, DEFAULT.kinds)) == set()


def test_nothing_pinned_evidence_error_or_fix_is_retired(tmp_path):
    b = Builder(tmp_path / ".kindling")
    ids = b.session(
        "s1",
        T0,
        [
            ("command", "Bash: pytest"),  # 0: before the failure: plain raw output
            ("error", "Bash: pytest"),  # 1: an error
            ("tool_call", "Read: app.py"),  # 2: raw output
            ("file_diff", "Edit: app.py"),  # 3: the diff that fixed it
            ("command", "Bash: pytest"),  # 4: the success that fixed it
            ("tool_call", "Grep: total"),  # 5: pinned
            ("command", "Bash: git status"),  # 6: the summary's evidence
        ],
        evidence=(6,),
    )
    b.pin(ids[5], T0)
    b.session("later", T0 + 60 * DAY_MS, [("message", None)])
    assert retired_ids(b.store, Policy(30, 0, DEFAULT.kinds)) == {ids[0], ids[2]}


def test_a_fix_in_a_later_session_is_kept(tmp_path):
    b = Builder(tmp_path / ".kindling")
    first = b.session("s1", T0, [("error", "Bash: make deploy")])
    second = b.session(
        "s2", T0 + DAY_MS, [("command", "Bash: ls"), ("command", "Bash: make deploy")]
    )
    b.session("other", T0 + DAY_MS, [("command", "Bash: make deploy")], repo="acme/web")
    b.session("later", T0 + 60 * DAY_MS, [("message", None)])
    retired = retired_ids(b.store, Policy(30, 0, DEFAULT.kinds))
    assert first[0] not in retired and second[1] not in retired
    assert second[0] in retired


def test_output_no_summary_keeps_is_not_retired(tmp_path):
    b = Builder(tmp_path / ".kindling")
    open_ids = b.session("open", T0, [("command", "Bash: ls")], closed=False)
    bare = b.session("bare", T0, [("command", "Bash: ls")], summary=False)
    b.store.write(
        "observations",
        {
            "id": "loose-0001",
            "kind": "command",
            "content": "in no capsule",
            "provenance": {},
            "ts": T0,
            "scopeIds": {},
            "redacted": False,
        },
    )
    b.session("later", T0 + 60 * DAY_MS, [("message", None)])
    retired = retired_ids(b.store, Policy(30, 0, DEFAULT.kinds))
    assert retired.isdisjoint({open_ids[0], bare[0], "loose-0001"})


def test_the_policy_kinds_decide_what_is_raw_output(tmp_path):
    b = Builder(tmp_path / ".kindling")
    ids = b.session("s1", T0, [("command", "Bash: ls"), ("file_diff", "Edit: x.py")])
    b.session("later", T0 + 60 * DAY_MS, [("message", None)])
    assert retired_ids(b.store, Policy(30, 0, ("command",))) == {ids[0]}
    assert retired_ids(b.store, Policy(30, 0, DEFAULT.kinds)) == set(ids)


# ---------------------------------------------------------------- applying


def test_gc_asks_before_a_policy_new_to_this_clone_then_applies_it(tmp_path):
    b = Builder(tmp_path / ".kindling")
    ids = b.session("s1", T0, [("command", "Bash: ls")])
    b.session("later", T0 + 60 * DAY_MS, [("message", None)])
    policy_file = b.store.root / POLICY_NAME
    (b.store.root / POLICY_NAME).write_text('{"keepSessions": 0}')
    report = gc(b.store)
    assert report.needs_confirmation and not report.applied
    assert b.store.path_for("observations", ids[0]).exists()
    report = gc(b.store, confirm=True)
    assert report.applied and report.removed == 1
    assert not b.store.path_for("observations", ids[0]).exists()
    records, bad = read_records(b.store)
    assert set(records) == {ids[0]} and bad == []
    # The same policy again: no question, nothing left to do.
    again = gc(b.store)
    assert again.applied and again.removed == 0 and not again.needs_confirmation
    # A changed policy (as a pull would bring): shown first, applied only when confirmed.
    policy_file.write_text('{"keepSessions": 0, "keepDays": 1}')
    b.session("s3", T0 + 58 * DAY_MS, [("command", "Bash: ls")])
    changed = gc(b.store)
    assert changed.needs_confirmation and len(changed.plan.retire) == 1


def test_gc_writes_the_default_policy_it_applied(tmp_path):
    b = Builder(tmp_path / ".kindling")
    b.session("s1", T0, [("command", "Bash: ls")])
    for n in range(DEFAULT.keep_sessions):
        b.session(f"n{n}", T0 + 60 * DAY_MS + n * MIN, [("message", None)])
    assert not (b.store.root / POLICY_NAME).exists()
    report = gc(b.store, confirm=True)
    assert report.removed == 1 and report.policy_written
    assert (b.store.root / POLICY_NAME).read_bytes() == DEFAULT.encode()


def test_gc_refuses_while_a_file_does_not_parse_and_dry_run_still_plans(tmp_path):
    b = Builder(tmp_path / ".kindling")
    ids = b.session("s1", T0, [("command", "Bash: ls")])
    b.session("later", T0 + 60 * DAY_MS, [("message", None)])
    (b.store.root / POLICY_NAME).write_text('{"keepSessions": 0}')
    bad = b.store.objects / "capsules" / "00" / "cap_broken.json"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("<<<<<<< ours\n")
    with pytest.raises(KindlingError, match="do not parse"):
        gc(b.store, confirm=True)
    assert b.store.path_for("observations", ids[0]).exists()
    planned = gc(b.store, dry_run=True)
    assert planned.unreadable == 1 and [r.id for r in planned.plan.retire] == ids


def test_gc_leaves_a_file_changed_since_the_census(tmp_path, monkeypatch):
    b = Builder(tmp_path / ".kindling")
    ids = b.session("s1", T0, [("command", "Bash: ls"), ("command", "Bash: pwd")])
    b.session("later", T0 + 60 * DAY_MS, [("message", None)])
    (b.store.root / POLICY_NAME).write_text('{"keepSessions": 0}')
    import kindling.retention.apply as apply

    real = apply.make_plan

    def plan_then_forget(census, policy):
        plan = real(census, policy)
        path = b.store.path_for("observations", ids[0])
        entity = canonical.decode(path.read_bytes())
        path.write_bytes(canonical.encode({**entity, "content": "[redacted]", "redacted": True}))
        return plan

    monkeypatch.setattr(apply, "make_plan", plan_then_forget)
    report = gc(b.store, confirm=True)
    assert (report.removed, report.skipped) == (1, 1)
    assert b.store.path_for("observations", ids[0]).exists()


def test_two_copies_of_a_store_reach_identical_files(tmp_path):
    b = Builder(tmp_path / "a" / ".kindling")
    for n in range(6):
        b.session(f"s{n}", T0 + n * 10 * DAY_MS, [("command", "Bash: ls"), ("error", "Bash: x")])
    copy = tmp_path / "b" / ".kindling"
    shutil.copytree(b.store.root, copy)
    for root in (b.store.root, copy):
        gc(Store.open(root), confirm=True)
    assert _tree(b.store.root) == _tree(copy)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# ---------------------------------------------------------------- property


KINDS = ("command", "tool_call", "file_diff", "error", "message")
SUBJECTS = ("Bash: pytest", "Edit: app.py", None)

sessions_strategy = st.lists(
    st.tuples(
        st.integers(0, 60),  # start, in days
        st.sampled_from(("acme/api", "acme/web")),
        st.lists(
            st.tuples(st.sampled_from(KINDS), st.sampled_from(SUBJECTS)), min_size=1, max_size=8
        ),
        st.sampled_from(("summary", "summary", "summary", "bare", "open")),
        st.lists(st.integers(0, 7), max_size=2),  # evidence positions
        st.lists(st.integers(0, 7), max_size=2),  # pinned positions
    ),
    min_size=1,
    max_size=7,
)


@fuzz_settings(100)
@given(
    sessions=sessions_strategy,
    keep_days=st.integers(1, 40),
    keep_sessions=st.integers(0, 3),
    kinds=st.sets(st.sampled_from(("command", "tool_call", "file_diff")), min_size=1),
)
def test_property_nothing_pinned_evidence_error_or_fix_is_ever_retired(
    tmp_path_factory, sessions, keep_days, keep_sessions, kinds
):
    root = tmp_path_factory.mktemp("prop") / ".kindling"
    b = Builder(root)
    protected: set[str] = set()
    all_ids: dict[str, str] = {}
    by_session: list[list[dict]] = []
    for n, (day, repo, steps, state, evidence, pinned) in enumerate(sessions):
        ids = b.session(
            f"s{n}",
            T0 + day * DAY_MS,
            steps,
            repo=repo,
            summary=state != "bare",
            closed=state != "open",
            evidence=tuple(i for i in evidence if i < len(steps)),
        )
        protected.update(ids[i] for i in evidence if i < len(steps) and state == "summary")
        for i in pinned:
            if i < len(steps):
                b.pin(ids[i], T0)
                protected.add(ids[i])
        for ident, (kind, _) in zip(ids, steps, strict=True):
            all_ids[ident] = kind
        by_session.append([b.store.load("observations", i) for i in ids])
    for observations in by_session:
        episode = of_observations(sorted(observations, key=lambda o: (o["ts"], o["id"])))
        protected.update(s.id for s in episode.fixed.values())
        protected.update(d.id for diffs in episode.fix_of.values() for d in diffs)
    policy = Policy(keep_days, keep_sessions, tuple(sorted(kinds)))
    plan = plan_of(b.store, policy)
    retired = {r.id for r in plan.retire}
    assert retired.isdisjoint(protected)
    for ident in retired:
        assert all_ids[ident] in kinds and all_ids[ident] not in ("error", "message")
        assert b.store.load("observations", ident)["ts"] < plan.horizon - keep_days * DAY_MS
    # Applying it to a copy gives what applying it to the original gives.
    copy = root.parent / "copy" / ".kindling"
    shutil.copytree(root, copy)
    for store in (b.store, Store.open(copy)):
        (store.root / POLICY_NAME).write_bytes(policy.encode())
        gc(store, confirm=True)
    assert _tree(root) == _tree(copy)
    assert {p.stem for p in root.rglob("objects/observations/*/*.json")} == set(all_ids) - retired


# ---------------------------------------------------------------- what a tool call records


def _read_payload(project: Path, path: str, content: str, **file: int) -> dict:
    return {
        "session_id": "sess-read-1",
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": str(project / path), "offset": 40, "limit": 3},
        "tool_response": {"type": "text", "file": {"content": content, **file}},
        "tool_use_id": "toolu_read_1",
    }


def test_a_read_records_its_path_range_and_a_short_masked_head(project):
    from kindling.agents.records import READ_HEAD_CHARS, tool_record

    text = "".join(f"line {n} of the file\n" for n in range(40, 43))
    record = tool_record(
        "PostToolUse",
        _read_payload(project, "src/app.py", text, startLine=40, numLines=3, totalLines=300),
    )
    assert record.content == (
        "Read: src/app.py (lines 40-42 of 300)\nline 40 of the file\nline 41 of the file\n"
        "line 42 of the file"
    )
    assert record.provenance["subject"] == "Read: src/app.py"  # what fixes are matched on
    assert record.provenance["payload"] == {"tool_input": {"limit": 3, "offset": 40}}
    big = tool_record("PostToolUse", _read_payload(project, "big.txt", "y" * 1_000_000))
    assert len(big.content) < READ_HEAD_CHARS + 100
    secret = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
    masked = tool_record("PostToolUse", _read_payload(project, ".env", secret))
    assert "wJalrXUtnFEMI" not in masked.content


def test_a_read_is_found_by_its_path(project):
    import json

    from kindling.agents.hooks import run_hook
    from kindling.memory import Memory

    payload = _read_payload(project, "src/billing/invoices.py", '"""Invoice export."""\n')
    result = run_hook("PostToolUse", json.dumps(payload).encode(), str(project / ".kindling"))
    assert result.recorded is not None, result.message
    with Memory(project / ".kindling") as memory:
        found = memory.search("billing/invoices.py")
        ids = [c["entity"]["id"] for c in found["candidates"]]
    assert result.recorded in ids
