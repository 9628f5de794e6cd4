"""The operations console's files (SPEC §3 GET /ui/): served from the binary with strict headers,
no token needed for them, nothing else reachable through them. tests/console drives the page."""

import json

from client import Api

CSP_START = "default-src 'self'"
CONFIG = """
[[auth.tokens]]
name = "ops"
token = "console-admin"
scopes = ["admin"]
"""


def assert_static_headers(r, content_type):
    assert r.status == 200, r
    assert r.headers["Content-Type"] == content_type, r.headers
    assert r.headers["Cache-Control"] == "no-cache", r.headers
    assert r.headers["X-Content-Type-Options"] == "nosniff", r.headers
    assert r.headers["Content-Security-Policy"].startswith(CSP_START), r.headers
    assert "'unsafe-inline'" not in r.headers["Content-Security-Policy"]


def test_ui_redirects_to_the_index(api):
    r = api.get("/ui")
    assert r.status == 301, r
    assert r.headers["Location"] == "/ui/"


def test_ui_index_and_assets(api):
    r = api.get("/ui/")
    assert_static_headers(r, "text/html; charset=utf-8")
    assert '<script type="module" src="./app.js"></script>' in r.body
    assert "<title>Madeira console</title>" in r.body

    r = api.get("/ui/app.js")
    assert_static_headers(r, "text/javascript; charset=utf-8")
    assert "import " in r.body
    assert_static_headers(api.get("/ui/style.css"), "text/css; charset=utf-8")
    assert api.get("/ui/index.html").body == api.get("/ui/").body


def test_ui_unknown_files_are_404_json(api):
    for path in ("/ui/nope.js", "/ui/..%2Fmadeira.db", "/ui/%2e%2e", "/ui/a/b.js",
                 "/ui/../v1/dead", "/ui/index.html%00.js"):
        r = api.get(path)
        assert r.status == 404, (path, r)
        assert r.headers["Content-Type"] == "application/json", (path, r.headers)
        assert r.code == "not_found", (path, r)
        assert json.loads(r.body)["error"]["message"], (path, r)


def test_ui_is_get_only(api):
    r = api.post("/ui/", {})
    assert r.status == 405 and r.code == "method_not_allowed", r
    assert r.headers["Allow"] == "GET"


def test_ui_files_need_no_token_but_the_data_does(start_server):
    secured = start_server(config=CONFIG)
    anonymous = Api(secured.port)
    assert_static_headers(anonymous.get("/ui/"), "text/html; charset=utf-8")
    assert anonymous.get("/ui/api.js").status == 200
    r = anonymous.get("/v1/dead")
    assert r.status == 401 and r.code == "unauthorized", r
    assert Api(secured.port, "console-admin").get("/v1/dead").status == 200
