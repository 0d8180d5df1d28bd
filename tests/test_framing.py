"""Every HTML answer (dashboard, GraphiQL) can be framed by no other site and is
never sniffed as another type; other answers carry the same headers. On the real server;
app/framing.py's policy merge by hypothesis."""

import httpx
from hypothesis import given
from hypothesis import strategies as st

from app.framing import with_frame_ancestors
from tests.helpers.live_server import LiveServer, server_fixture

TOKEN = "frame-secret"
server = server_fixture({"INFRAGRAPH_API_TOKENS": f"ops:{TOKEN}"}, scope="module")
HTML = {"Accept": "text/html"}
PAGES = ["/", "/ui/inventory", "/graphql"]  # dashboard, GraphiQL


def _assert_framed(response: httpx.Response) -> None:
    assert response.headers["x-frame-options"] == "DENY", response.url
    assert response.headers["x-content-type-options"] == "nosniff", response.url
    policy = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy, response.url
    assert len(response.headers.get_list("content-security-policy")) == 1


def test_html_pages_are_not_framed_or_sniffed(server: LiveServer) -> None:
    with httpx.Client(base_url=server.url, auth=("ops", TOKEN), timeout=30) as client:
        for path in PAGES:
            response = client.get(path, headers=HTML)
            assert response.status_code == 200, (path, response.text[:200])
            assert response.headers["content-type"].startswith("text/html"), path
            _assert_framed(response)
        _assert_framed(client.get("/states/none"))  # JSON, a 404
    _assert_framed(httpx.get(f"{server.url}/", headers=HTML))  # 401, before any route


_DIRECTIVE = st.sampled_from(
    ["default-src 'self'", "script-src https://unpkg.com", "img-src data:", "style-src 'self'"]
)


@given(st.lists(_DIRECTIVE, max_size=4), st.sampled_from(["", " ", ";"]))
def test_a_policy_keeps_its_directives_and_gains_frame_ancestors(
    directives: list[str], trailing: str
) -> None:
    policy = "; ".join(directives) + trailing if directives else None
    merged = with_frame_ancestors(policy)
    assert [d.strip() for d in merged.split(";")] == [*directives, "frame-ancestors 'none'"]
    assert with_frame_ancestors(merged) == merged  # said once


@given(st.sampled_from(["'self'", "https://ops.example", "'none'"]))
def test_a_policy_naming_its_frame_ancestors_keeps_them(source: str) -> None:
    policy = f"default-src 'self'; frame-ancestors {source}"
    assert with_frame_ancestors(policy) == policy
