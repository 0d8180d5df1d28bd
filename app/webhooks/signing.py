"""A delivery's signature: HMAC-SHA256 of the exact body bytes under the webhook's
secret, sent as `X-Infragraph-Signature-256: sha256=<hex>` (pure)."""

import hashlib
import hmac

SIGNATURE_HEADER = "X-Infragraph-Signature-256"
DELIVERY_HEADER = "X-Infragraph-Delivery"
TIMESTAMP_HEADER = "X-Infragraph-Timestamp"
EVENT_HEADER = "X-Infragraph-Event"
PREFIX = "sha256="


def signature(secret: bytes, body: bytes) -> str:
    return PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify(secret: bytes, body: bytes, header: str) -> bool:
    """What a receiver does: recompute and compare in constant time."""
    return hmac.compare_digest(signature(secret, body), header)
