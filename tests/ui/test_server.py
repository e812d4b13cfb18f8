"""The inspector's HTTP side, through a real ``acp-proxy ui`` process: who is let in, what
the routes answer, and that they answer what the other commands say."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from support.demo import demo_database
from support.proc import PROXY
from support.ui import request, ui_server


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ui-demo")
    d.chmod(0o700)
    db = d / "demo.sqlite"
    return demo_database(db)


@pytest.fixture(scope="module")
def url(demo_db: Path) -> object:
    with ui_server(demo_db) as u:
        yield u


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc


def test_foreign_host_is_refused(url: str) -> None:
    port = urllib.parse.urlsplit(url).port
    for host in (f"evil.example:{port}", f"127.0.0.1.nip.io:{port}", "127.0.0.1:1", ""):
        status, _, body = request(url, "/api/captures", {"Host": host})
        assert status == 421, (host, body)
        status, _, _ = request(url, "/", {"Host": host})
        assert status == 421
    status, _, _ = request(url, "/api/captures", {"Host": f"localhost:{port}"})
    assert status == 200


def test_foreign_origin_is_refused(url: str) -> None:
    for path in ("/api/captures", "/api/events", "/api/captures/1/frames"):
        status, _, body = request(url, path, {"Host": _host(url), "Origin": "http://evil.example"})
        assert status == 403 and b"cross-origin" in body
    status, _, _ = request(
        url, "/api/captures", {"Host": _host(url), "Sec-Fetch-Site": "cross-site"}
    )
    assert status == 403
    status, _, _ = request(url, "/api/captures", {"Host": _host(url), "Origin": url.rstrip("/")})
    assert status == 200


def test_read_only_and_strict_headers(url: str) -> None:
    status, _, _ = request(url, "/api/captures", {"Host": _host(url)}, method="POST")
    assert status == 405
    status, headers, body = request(url, "/", {"Host": _host(url)})
    assert status == 200 and b'<script src="/static/app.js"' in body
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert "unsafe-inline" not in csp and "http" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert b"<script>" not in body and b"http://" not in body and b"https://" not in body
    status, _, _ = request(url, "/static/../../etc/passwd", {"Host": _host(url)})
    assert status == 404


def test_non_loopback_needs_a_token(demo_db: Path) -> None:
    r = subprocess.run(
        [*PROXY, "ui", "--db", str(demo_db), "--listen", "0.0.0.0:0"],
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 2 and b"without --token" in r.stderr
    assert r.stderr.count(b"\n") == 1


def test_token_is_required_by_the_api(demo_db: Path) -> None:
    with ui_server(demo_db, "--listen", "0.0.0.0:0", "--token", "s3cret") as u:
        assert "token=s3cret" in u
        host = _host(u)
        status, _, _ = request(u, "/api/captures", {"Host": host})
        assert status == 401
        status, _, _ = request(u, "/api/captures", {"Host": host, "Authorization": "Bearer no"})
        assert status == 401
        status, _, body = request(
            u, "/api/captures", {"Host": host, "Authorization": "Bearer s3cret"}
        )
        assert status == 200 and json.loads(body)[0]["id"] == 1
        status, _, _ = request(u, "/api/captures?token=s3cret", {"Host": host})
        assert status == 200
        # a name (DNS rebinding) is refused even with the token; an address is not
        port = urllib.parse.urlsplit(u).port
        status, _, _ = request(u, "/api/captures?token=s3cret", {"Host": f"evil.example:{port}"})
        assert status == 421
        status, _, _ = request(u, "/api/captures?token=s3cret", {"Host": f"10.1.2.3:{port}"})
        assert status == 200


def _get(url: str, path: str) -> object:
    status, _, body = request(url, path, {"Host": _host(url)})
    assert status == 200, body
    return json.loads(body)


def test_timeline_pages_and_filters_agree_with_show(url: str, demo_db: Path) -> None:
    shown = subprocess.run(
        [*PROXY, "show", "1", "--db", str(demo_db), "--json"], capture_output=True, check=True
    )
    every = _get(url, "/api/captures/1/frames?limit=1000")
    assert isinstance(every, dict) and every["done"]
    frames = every["frames"]
    expected = json.loads(shown.stdout)["frames"]
    assert [(f["seq"], f["kind"], f["method"]) for f in frames] == [
        (e["seq"], e["kind"], e["method"]) for e in expected
    ]
    page = _get(url, "/api/captures/1/frames?limit=5&after=9")
    assert isinstance(page, dict) and [f["seq"] for f in page["frames"]] == [10, 11, 12, 13, 14]
    only = _get(url, "/api/captures/1/frames?kind=response&direction=a2c")
    assert isinstance(only, dict) and only["frames"]
    assert all(f["kind"] == "response" and f["direction"] == "a2c" for f in only["frames"])
    fs = _get(url, "/api/captures/1/frames?method=fs/*")
    assert isinstance(fs, dict) and {f["method"] for f in fs["frames"]} <= {
        "fs/read_text_file",
        "fs/write_text_file",
    }
    since = frames[10]["t_ms"] - 0.001  # times are shown rounded to microseconds
    late = _get(url, f"/api/captures/1/frames?from_ms={since}")
    assert isinstance(late, dict) and late["frames"][0]["seq"] <= 10
    assert all(f["t_ms"] >= since for f in late["frames"])
    upto = _get(url, f"/api/captures/1/frames?to_ms={since}")
    assert isinstance(upto, dict) and upto["frames"][-1]["seq"] < 10


def test_frame_detail_pairs_and_state(url: str) -> None:
    f = _get(url, "/api/captures/1/frames/0")
    assert isinstance(f, dict) and f["method"] == "initialize"
    assert f["partner"]["role"] == "response" and f["partner"]["seq"] == 1
    assert json.loads(f["pretty"])["method"] == "initialize" and f["hex"] is None
    r = _get(url, "/api/captures/1/frames/1")
    assert isinstance(r, dict) and r["partner"] == {
        "role": "request",
        "seq": 0,
        "latency_ms": r["latency_ms"],
    }
    status, _, body = request(url, "/api/captures/1/frames/99999", {"Host": _host(url)})
    assert status == 404 and b"no frame" in body
    st = _get(url, "/api/captures/1/state?at=3")
    assert isinstance(st, dict) and st["turns"] == [] and st["sessions"]


def test_views_are_the_commands_views(url: str, demo_db: Path) -> None:
    for view in ("tools", "terminals", "diffs"):
        cli = subprocess.run(
            [*PROXY, view, "1", "--db", str(demo_db), "--json"], capture_output=True, check=True
        )
        assert _get(url, f"/api/captures/1/view/{view}") == json.loads(cli.stdout)
    at = subprocess.run(
        [*PROXY, "tools", "1", "--db", str(demo_db), "--json", "--at", "12"],
        capture_output=True,
        check=True,
    )
    assert _get(url, "/api/captures/1/view/tools?at=12") == json.loads(at.stdout)


def test_exports_are_the_export_command(url: str, demo_db: Path) -> None:
    for fmt in ("jsonl", "patch", "html"):
        cli = subprocess.run(
            [*PROXY, "export", "1", "--db", str(demo_db), "--format", fmt],
            capture_output=True,
            check=True,
        )
        status, headers, body = request(url, f"/api/captures/1/export/{fmt}", {"Host": _host(url)})
        assert status == 200 and "attachment" in headers["content-disposition"]
        if fmt == "html":  # the page's CSP travels with it
            assert "script-src" not in headers["content-security-policy"]
            body, expected = body.split(b"started")[1], cli.stdout.split(b"started")[1]
            assert body.count(b"<tr") == expected.count(b"<tr")
        else:
            assert body == cli.stdout


def _search_when_indexed(url: str, query: str, timeout: float = 30) -> dict[str, Any]:
    """The answer to a search once the server's indexer has caught up: it indexes on its
    own thread every half second, and says how many frames are still ``pending``."""
    deadline = time.monotonic() + timeout
    while True:
        res = _get(url, f"/api/search?q={query}")
        assert isinstance(res, dict)
        if res["pending"] == 0 or time.monotonic() > deadline:
            return res
        time.sleep(0.1)


def test_search_route_finds_and_links(url: str) -> None:
    res = _search_when_indexed(url, "write_text_file")
    assert res["pending"] == 0 and res["hits"], res
    hit = res["hits"][0]
    assert hit["capture"] == 1 and "write_text_file" in (hit["match"] + hit["after"])
    f = _get(url, f"/api/captures/1/frames/{hit['seq']}")
    assert isinstance(f, dict) and "write_text_file" in f["text"]
    status, _, body = request(url, "/api/search?q=%22%22", {"Host": _host(url)})
    assert status == 400 and b"nothing to search" in body


HUGE = "99999999999999999999"  # more than 2^63 - 1: SQLite cannot bind it


@pytest.mark.parametrize(
    "path",
    [
        f"/api/captures/1/frames/{HUGE}",
        f"/api/captures/1/state?at={HUGE}",
        f"/api/captures/1/frames?after={HUGE}",
        f"/api/captures/1/frames?after=-{HUGE}",
        f"/api/captures/1/frames?limit={HUGE}",
        "/api/captures/1/frames?from_ms=1e400",
        "/api/captures/1/frames?to_ms=nan",
        f"/api/captures/1/view/turns?at={HUGE}",
        f"/api/search?q=tool&before={HUGE}",
        f"/api/search?q=tool&limit={HUGE}",
        f"/api/captures/{HUGE}",
        f"/api/captures/{HUGE}/frames",
    ],
)
def test_numbers_too_large_for_sqlite_are_a_400(url: str, path: str) -> None:
    status, headers, body = request(url, path, {"Host": _host(url)})
    assert status == 400, body
    assert headers["content-type"] == "application/json" and json.loads(body)["error"]
    status, _, _ = request(url, "/api/captures", {"Host": _host(url)})
    assert status == 200  # and the server is still there
