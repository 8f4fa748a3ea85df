"""Rebuild the bundled example store (kindling/example, linked as .kindling-example).

A short debugging story: users are logged out right after login; the JWT expiry check
compared seconds with milliseconds. Written through the store code, so every file is
canonical. Run from the repository root: `python scripts/build_example.py`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kindling.store import Store

ROOT = Path(__file__).resolve().parent.parent / "kindling" / "example"
T0 = 1781951400000  # 2026-06-20 10:30:00 UTC
SCOPE = {"sessionId": "session-jwt-1", "repoId": "acme-api", "agentId": "claude-code"}
CAP = "cap_6f2d8b1c4e3a4f0e9b7d5c1a2e8f4b6d"
SUM = "sum_1b2c3d4e5f60718293a4b5c6d7e8f901"
PIN = "pin_4d5e6f708192a3b4c5d6e7f8091a2b3c"

OBSERVATIONS = [
    (
        "3f1a9c2e-7b4d-4e8f-9a1c-2d3e4f5a6b7c",
        "message",
        0,
        "Users report being logged out immediately after login since the auth library upgrade.",
        {"source": "issue #412"},
    ),
    (
        "5f1c8e2a-3b6d-4c9e-8f0a-1b2c3d4e5f60",
        "command",
        64_000,
        "npm test -- auth: 3 failed, 39 passed "
        "(auth middleware rejects valid tokens after the upgrade)",
        {"command": "npm test -- auth", "exitCode": 1, "cwd": "/home/dev/acme-api"},
    ),
    (
        "9c20f3a1-2b4d-4f8e-9a1c-7e0d5b6f2a33",
        "error",
        124_000,
        "JWT validation failed: token expired",
        {"stack": "Error: Token expired\n  at validateToken (src/middleware/validateToken.ts:42)"},
    ),
    (
        "a7b8c9d0-1e2f-4a3b-8c4d-5e6f7a8b9c0d",
        "tool_call",
        190_000,
        "Read src/middleware/validateToken.ts: expiry check is `payload.exp < Date.now()`",
        {"tool": "Read", "file": "src/middleware/validateToken.ts"},
    ),
    (
        "b1c2d3e4-f5a6-4b7c-9d8e-0f1a2b3c4d5e",
        "message",
        250_000,
        "Root cause: JWT exp is in seconds but Date.now() is in milliseconds, so every token "
        "looks expired. The old library converted exp to ms for us; the new one does not.",
        {},
    ),
    (
        "c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f",
        "file_diff",
        330_000,
        "--- a/src/middleware/validateToken.ts\n+++ b/src/middleware/validateToken.ts\n"
        "@@ -40,3 +40,3 @@\n-  if (payload.exp < Date.now()) {\n"
        "+  if (payload.exp < Math.floor(Date.now() / 1000)) {\n"
        "     throw new TokenExpiredError(payload.exp);\n   }\n",
        {"file": "src/middleware/validateToken.ts", "tool": "Edit"},
    ),
    (
        "d5e6f7a8-b9c0-4d1e-8f2a-3b4c5d6e7f80",
        "command",
        395_000,
        "npm test -- auth: 42 passed, "
        "including the new regression test for token expiry in seconds",
        {"command": "npm test -- auth", "exitCode": 0},
    ),
]
OTHER = (
    "e7f8091a-2b3c-4d5e-9f60-718293a4b5c6",
    "message",
    -86_400_000,
    "Rate limiter settings moved from config/rate.json to RATE_LIMIT_* environment variables.",
    {},
)


def observation(oid, kind, offset, content, provenance, scope):
    return {
        "id": oid,
        "kind": kind,
        "content": content,
        "provenance": provenance,
        "ts": T0 + offset,
        "scopeIds": scope,
        "redacted": False,
    }


def main() -> None:
    if (ROOT / "objects").exists():
        shutil.rmtree(ROOT / "objects")
    store = Store.create(ROOT)
    for item in OBSERVATIONS:
        store.write("observations", observation(*item, dict(SCOPE)))
    store.write(
        "observations", observation(*OTHER, {"sessionId": "session-rate-0", "repoId": "acme-api"})
    )
    closed = T0 + 420_000
    store.write(
        "capsules",
        {
            "id": CAP,
            "type": "session",
            "intent": "Fix users being logged out right after login",
            "status": "closed",
            "openedAt": T0 - 5_000,
            "closedAt": closed,
            "scopeIds": dict(SCOPE),
            "observationIds": [o[0] for o in OBSERVATIONS],
            "summaryId": SUM,
        },
    )
    store.write(
        "summaries",
        {
            "id": SUM,
            "content": "Fixed the JWT expiry check in the validateToken middleware: exp is in "
            "seconds, so compare it with Math.floor(Date.now() / 1000). Added a "
            "regression test; all 42 auth tests pass.",
            "confidence": 0.9,
            "evidenceRefs": [OBSERVATIONS[2][0], OBSERVATIONS[4][0], OBSERVATIONS[5][0]],
            "capsuleId": CAP,
            "ts": closed,
            "scopeIds": dict(SCOPE),
        },
    )
    store.write(
        "pins",
        {
            "id": PIN,
            "targetType": "observation",
            "targetId": OBSERVATIONS[4][0],
            "reason": "root cause — keep handy",
            "createdAt": T0 + 260_000,
            "expiresAt": None,
            "scopeIds": {"sessionId": "session-jwt-1"},
        },
    )
    print(f"example store written to {ROOT}")


if __name__ == "__main__":
    main()
