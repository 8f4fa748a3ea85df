"""The one exception type whose message is meant for a person."""


class KindlingError(Exception):
    """An error the user can act on; the CLI prints `Error: <message>` and exits 1."""


class ValidationError(KindlingError):
    """An entity, id or option value is invalid; nothing was written."""


class NotFoundError(KindlingError):
    """An id names no stored entity."""


class CorruptFileError(KindlingError):
    """A stored file does not parse or is not a valid entity; its bytes are left alone."""

    def __init__(self, path: object, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")
