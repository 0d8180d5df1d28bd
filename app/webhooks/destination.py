"""Where a webhook may send: `https://` only (`http://` with allow_http), and no
loopback, private, link-local or otherwise non-public address (with allow_private:
any), checked on the addresses the name resolves to. The sender then connects to the
very address checked (`Destination.request_url`, the name kept for the Host header and
TLS), so a name that resolves elsewhere the second time (DNS rebinding) gains nothing.
"""

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from app.errors import BadInput
from app.webhooks.settings import WebhookSettings

MAX_URL_CHARS = 2048
_PORTS = {"https": 443, "http": 80}
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class UnsafeDestination(BadInput):
    pass


@dataclass(frozen=True)
class Target:
    """A URL taken apart: what is resolved, and what is sent."""

    scheme: str
    host: str  # a name or an address, without IPv6 brackets
    port: int
    path: str  # with the query
    netloc: str  # as given (the Host header)


def parse_url(url: str, settings: WebhookSettings) -> Target:
    """The URL's parts; UnsafeDestination for a scheme not allowed or a malformed URL."""
    if len(url) > MAX_URL_CHARS or not url.isprintable():
        raise UnsafeDestination(f"a webhook URL is printable and at most {MAX_URL_CHARS} chars")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise UnsafeDestination(f"not a URL: {url!r} ({exc})") from None
    allowed = ("https", "http") if settings.allow_http else ("https",)
    if parts.scheme not in allowed:
        raise UnsafeDestination(
            f"a webhook URL must be https:// (http:// only with INFRAGRAPH_WEBHOOK_ALLOW_HTTP=1), "
            f"got {url!r}"
        )
    if not parts.hostname:
        raise UnsafeDestination(f"the webhook URL {url!r} names no host")
    if parts.username is not None or parts.password is not None:
        raise UnsafeDestination("a webhook URL holds no credentials: the signature authenticates")
    netloc = parts.netloc
    path = urlunsplit(("", "", parts.path or "/", parts.query, ""))
    return Target(parts.scheme, parts.hostname, port or _PORTS[parts.scheme], path, netloc)


def refusal(address: Address, settings: WebhookSettings) -> str | None:
    """Why a delivery may not go to `address`; None when it may (pure)."""
    if settings.allow_private:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        return "loopback"
    if address.is_unspecified:
        return "unspecified"
    if address.is_link_local:
        return "link-local"
    if address.is_private:
        return "private"
    if not address.is_global or address.is_multicast:
        return "not public"
    return None


@dataclass(frozen=True)
class Destination:
    target: Target
    address: Address  # the one checked, and connected to

    @property
    def request_url(self) -> str:
        host = f"[{self.address}]" if self.address.version == 6 else str(self.address)
        return f"{self.target.scheme}://{host}:{self.target.port}{self.target.path}"


async def resolve(url: str, settings: WebhookSettings) -> Destination:
    """The address to send `url`'s deliveries to, every address the name has checked;
    UnsafeDestination when it may not be reached."""
    target = parse_url(url, settings)
    try:
        literal: Address | None = ipaddress.ip_address(target.host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                target.host, target.port, type=socket.SOCK_STREAM
            )
        except (socket.gaierror, UnicodeError) as exc:
            raise UnsafeDestination(
                f"the webhook host {target.host!r} does not resolve: {exc}"
            ) from None
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not addresses:
        raise UnsafeDestination(f"the webhook host {target.host!r} has no address")
    for address in addresses:
        if (why := refusal(address, settings)) is not None:
            raise UnsafeDestination(
                f"the webhook host {target.host!r} is at {address}, a {why} address: refused "
                "(INFRAGRAPH_WEBHOOK_ALLOW_PRIVATE=1 allows it)",
                {"address": str(address), "reason": why},
            )
    return Destination(target, addresses[0])
