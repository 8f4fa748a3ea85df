"""What a masked secret becomes; its own module so that naming it compiles no pattern."""

MASK = "[REDACTED]"
