"""SHA-256 without loading OpenSSL.

Importing `hashlib` loads OpenSSL, 3 to 4 ms: a tenth of what a hook may take.
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

__all__ = ["hexdigest", "sha256"]
# After this many digests a process switches to OpenSSL: three times faster per small file,
# so worth its 3 to 4 ms load once a rebuild, a big sync or an import is under way.
BULK = 256
_hashed = 0


def hexdigest(data: bytes) -> str:
    """The SHA-256 of `data` in hex."""
    global _hashed, sha256
    _hashed += 1
    if _hashed == BULK:
        from hashlib import sha256  # OpenSSL's, from here on
    return sha256(data).hexdigest()
