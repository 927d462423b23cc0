"""The decoding of answers the live tests cannot provoke on demand: a
stream that ends without a result, a 429 from the policy, a proxy's page."""
from __future__ import annotations

import json

import pytest

import codecell
from codecell import _common as c
from codecell.errors import error_from_response


def test_stream_end_without_result_raises_stream_failed():
    line = json.dumps({"type": "end", "status": "failed",
                       "error": {"code": "session_not_found", "message": "the session ended"}})
    with pytest.raises(codecell.StreamFailed) as e:
        c.parse_event(line.encode())
    assert e.value.code == "session_not_found" and e.value.exec_status == "failed"


def test_stream_events_decoded():
    assert c.parse_event(b'{"type":"stdout","text":"a\\n"}\n') == ("stdout", "a\n")
    assert c.parse_event(b"\n") is None
    assert c.parse_event(b'{"type":"from_a_newer_server"}') is None
    kind, res = c.parse_event(b'{"type":"result","data":{"image/png":"iVBORw0KGgo=",'
                              b'"text/plain":"<Figure>","is_main_result":false}}')
    assert kind == "result" and res.png == b"\x89PNG\r\n\x1a\n" and res.mimes == [
        "image/png", "text/plain"]
    with pytest.raises(codecell.TransportError):
        c.parse_event(b"<html>")


def test_policy_429_is_both_rate_limited_and_rejected():
    body = {"status": "rejected", "error": {"name": "PolicyRejected", "value":
            "rejected by policy 'p', rule 'rate': too many calls", "traceback": ""},
            "rule": "rate"}
    e = error_from_response(429, json.dumps(body).encode())
    assert isinstance(e, codecell.RateLimited) and isinstance(e, codecell.PolicyRejected)
    assert e.rule == "rate" and e.status == 429


def test_non_json_error_page():
    e = error_from_response(502, b"<html>Bad Gateway</html>")
    assert isinstance(e, codecell.ServerError) and e.status == 502
    assert "Bad Gateway" in e.message and e.code == "http_502"


def test_approval_pending_carries_its_id():
    e = error_from_response(202, b'{"status":"pending","approval_id":"ab12","message":"held"}')
    assert isinstance(e, codecell.ApprovalPending) and e.approval_id == "ab12"


def test_base_url_and_paths():
    ep = c.Endpoint.parse("http://[::1]:8080/prefix/")
    assert (ep.host, ep.port, ep.prefix, ep.host_header) == ("::1", 8080, "/prefix", "[::1]:8080")
    assert c.file_path("abc", "/a b/c#?.txt") == "/v1/sessions/abc/files/a%20b/c%23%3F.txt"
