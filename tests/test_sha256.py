"""kindling.sha256 gives hashlib's answers without loading OpenSSL."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from kindling import sha256


@pytest.mark.parametrize("data", [b"", b"abc", bytes(range(256)) * 300])
def test_digests_match_hashlib(data):
    assert sha256.hexdigest(data) == hashlib.sha256(data).hexdigest()


def test_a_hook_process_never_loads_openssl():
    code = (
        "import sys, kindling.agents.hook_command, kindling.memory, kindling.index.db; "
        "print(sorted(m for m in ('_hashlib', 'hashlib', 'hmac') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_process_hashing_many_files_switches_to_openssl_with_the_same_digests(monkeypatch):
    builtin = pytest.importorskip("_sha2" if sys.version_info >= (3, 12) else "_sha256").sha256
    monkeypatch.setattr(sha256, "sha256", builtin)  # a fresh process's; restored afterwards
    monkeypatch.setattr(sha256, "_hashed", 0)
    expected = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(sha256.BULK + 1)]
    digests = [sha256.hexdigest(str(i).encode()) for i in range(sha256.BULK - 1)]
    assert sha256.sha256 is not hashlib.sha256  # a few files: the built-in one
    digests += [sha256.hexdigest(str(i).encode()) for i in range(sha256.BULK - 1, sha256.BULK + 1)]
    assert sha256.sha256 is hashlib.sha256
    assert digests == expected
