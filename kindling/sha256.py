"""SHA-256 and HMAC-SHA-256 without loading OpenSSL.

Importing `hashlib` (or `hmac`) loads OpenSSL, 3 to 4 ms: a tenth of what a hook may take.
CPython's own SHA-256 (the built-in module `_sha2`, `_sha256` before 3.12) gives the same
digests, fast enough for the small files Kindling hashes; `hashlib` is the fallback where
neither exists.
"""

from __future__ import annotations

try:
    from _sha2 import sha256
except ImportError:
    try:
        from _sha256 import sha256
    except ImportError:  # another Python implementation
        from hashlib import sha256

__all__ = ["equal", "hexdigest", "hmac_hexdigest", "sha256"]
# After this many digests a process switches to OpenSSL: three times faster per small file,
# so worth its 3 to 4 ms load once a rebuild, a big sync or an import is under way.
BULK = 256
_hashed = 0

_BLOCK = 64  # SHA-256's block size in bytes
_INNER = bytes(x ^ 0x36 for x in range(256))
_OUTER = bytes(x ^ 0x5C for x in range(256))


def hexdigest(data: bytes) -> str:
    """The SHA-256 of `data` in hex."""
    global _hashed, sha256
    _hashed += 1
    if _hashed == BULK:
        from hashlib import sha256  # OpenSSL's, from here on
    return sha256(data).hexdigest()


def hmac_hexdigest(key: bytes, message: bytes) -> str:
    """HMAC-SHA-256 (RFC 2104) of `message` under `key`, in hex."""
    if len(key) > _BLOCK:
        key = sha256(key).digest()
    key = key.ljust(_BLOCK, b"\0")
    inner = sha256(key.translate(_INNER) + message).digest()
    return sha256(key.translate(_OUTER) + inner).hexdigest()


def equal(a: str, b: str) -> bool:
    """Compare two digests in time that does not depend on where they first differ."""
    x, y = a.encode(), b.encode()
    if len(x) != len(y):
        return False  # a digest's length is no secret
    diff = 0
    for p, q in zip(x, y, strict=True):
        diff |= p ^ q
    return diff == 0
