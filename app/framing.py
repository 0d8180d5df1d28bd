"""Headers that keep the server's pages out of other sites' frames and its answers read
as what they say they are: on every HTTP answer (the dashboard and GraphiQL are
HTML; the rest gains nothing from being framed or sniffed either).

- `X-Frame-Options: DENY` and CSP `frame-ancestors 'none'` (older and newer browsers):
  no page elsewhere can frame ours and trick a signed-in person into clicking in them.
- `X-Content-Type-Options: nosniff`: a JSON answer or a static file is never run as a
  script or a page, whatever its bytes look like.

A Content-Security-Policy a route sets keeps its directives; `frame-ancestors 'none'`
is added to it unless it names frame ancestors itself (`with_frame_ancestors`).
"""

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_CSP = b"content-security-policy"
_NONE = "frame-ancestors 'none'"
_FIXED = [(b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff")]
_REPLACED = {name for name, _ in _FIXED}


def with_frame_ancestors(policy: str | None) -> str:
    """`policy` (a CSP header value, or None) with `frame-ancestors 'none'`, unless it
    already has a frame-ancestors directive."""
    directives = [d.strip() for d in (policy or "").split(";") if d.strip()]
    if any(d.split()[0].lower() == "frame-ancestors" for d in directives):
        return "; ".join(directives)
    return "; ".join([*directives, _NONE])


class FramingHeaders:
    """Pure ASGI: adds the headers at the start of each HTTP answer; bodies pass as they are."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def framed(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() not in _REPLACED
                ]
                policy = next((v.decode("latin-1") for k, v in headers if k.lower() == _CSP), None)
                headers = [(k, v) for k, v in headers if k.lower() != _CSP]
                csp = with_frame_ancestors(policy).encode("latin-1")
                message["headers"] = [*headers, *_FIXED, (_CSP, csp)]
            await send(message)

        await self.app(scope, receive, framed)
