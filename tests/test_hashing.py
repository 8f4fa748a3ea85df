"""kindling.hashing gives hashlib's digests; only a caller that asks for bulk loads OpenSSL."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from kindling import hashing

OPENSSL = "sorted(m for m in ('_hashlib', 'hashlib', 'hmac') if m in sys.modules)"


def _in_a_fresh_process(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("digest", [hashing.hexdigest, hashing.bulk_hexdigest])
@pytest.mark.parametrize("data", [b"", b"abc", bytes(range(256)) * 300])
def test_digests_match_hashlib(digest, data):
    assert digest(data) == hashlib.sha256(data).hexdigest()


def test_a_hook_process_never_loads_openssl():
    code = (
        "import sys, kindling.agents.hook_command, kindling.memory, kindling.index.db; "
        f"print({OPENSSL})"
    )
    assert _in_a_fresh_process(code) == "[]"


def test_however_many_digests_only_bulk_hashing_loads_openssl():
    code = (
        "import sys\n"
        "from kindling import hashing\n"
        "for i in range(5 * hashing.BULK_FILES):\n"
        "    hashing.hexdigest(str(i).encode())\n"
        f"print({OPENSSL})\n"
        "hashing.bulk_hexdigest(b'x')\n"
        "print('_hashlib' in sys.modules)\n"
    )
    assert _in_a_fresh_process(code).splitlines() == ["[]", "True"]
