"""Fault points: inert without TIDEMARK_FAULTS; raise, raise once (marker file), sleep, kill."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cdc_core.instrumentation import faults


def configure(monkeypatch, config: dict) -> None:
    monkeypatch.setenv(faults.ENV, json.dumps(config))


def test_inert_without_the_variable(monkeypatch):
    monkeypatch.delenv(faults.ENV, raising=False)
    for name in faults.POINTS:
        faults.fault_point(name, chunk=0)
    assert faults.forwarded() == {}


def test_raise_only_where_configured_and_matching(monkeypatch):
    configure(monkeypatch, {"snapshot.after_precommit": {"action": "raise", "when": {"chunk": 0}}})
    faults.fault_point("binlog.after_loads", batch="b1")
    faults.fault_point("snapshot.after_precommit", chunk=1)
    with pytest.raises(faults.InjectedFault, match="snapshot.after_precommit"):
        faults.fault_point("snapshot.after_precommit", chunk=0)
    with pytest.raises(faults.InjectedFault):
        faults.fault_point("snapshot.after_precommit", chunk=0)


def test_raise_once_is_disarmed_by_its_marker(monkeypatch, tmp_path):
    marker = tmp_path / "once"
    configure(monkeypatch, {"binlog.committing": {"action": "raise_once", "marker": str(marker)}})
    with pytest.raises(faults.InjectedFault):
        faults.fault_point("binlog.committing", batch="b1")
    assert marker.exists()
    faults.fault_point("binlog.committing", batch="b1")


def test_unknown_points_and_actions_are_refused(monkeypatch):
    configure(monkeypatch, {"snapshot.nowhere": {"action": "raise"}})
    with pytest.raises(ValueError, match="unknown fault point"):
        faults.fault_point("snapshot.read")
    configure(monkeypatch, {"snapshot.read": {"action": "explode"}})
    with pytest.raises(ValueError, match="action must be one of"):
        faults.fault_point("snapshot.read")


def test_the_setting_travels_with_a_task_spec(monkeypatch):
    configure(monkeypatch, {"snapshot.read": {"action": "raise"}})
    spec = {"faults": faults.forwarded()}
    monkeypatch.delenv(faults.ENV)
    faults.adopt(spec)
    with pytest.raises(faults.InjectedFault):
        faults.fault_point("snapshot.read", chunk=3)
    faults.adopt({"faults": {}})
    faults.fault_point("snapshot.read", chunk=3)


def test_kill_ends_the_process_as_a_crash_would(tmp_path):
    code = "from cdc_core.instrumentation import faults; faults.fault_point('binlog.after_loads', batch='b'); print('survived')"
    env = {faults.ENV: json.dumps({"binlog.after_loads": {"action": "kill"}})}
    result = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                            check=False)
    assert result.returncode == -9 and "survived" not in result.stdout


def test_post_tells_the_outside_world_and_goes_on(monkeypatch, tmp_path):
    """``post``: the JSON body reaches the URL (a Doris stand-in's restart, in the e2e tests) and the
    code goes on; with a marker only once; an answer that is not 2xx raises, naming the point."""
    import http.server
    import threading

    received: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the stdlib's name
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(409 if self.path == "/busy" else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        configure(monkeypatch, {"binlog.after_state_write": {
            "action": "post", "url": f"{base}/restart", "body": {"node": "be"}, "marker": str(tmp_path / "once"),
            "when": {"batch": "b2"}}})
        faults.fault_point("binlog.after_state_write", batch="b1")  # not matched
        faults.fault_point("binlog.after_state_write", batch="b2")
        faults.fault_point("binlog.after_state_write", batch="b2")  # the marker disarmed it
        assert received == [{"node": "be"}]
        configure(monkeypatch, {"binlog.committing": {"action": "post", "url": f"{base}/busy"}})
        with pytest.raises(faults.InjectedFault, match=r"binlog.committing: POST .*/busy failed"):
            faults.fault_point("binlog.committing", batch="b3")
        configure(monkeypatch, {"binlog.committing": {"action": "post"}})
        with pytest.raises(ValueError, match="post needs an http"):
            faults.fault_point("binlog.committing", batch="b3")
    finally:
        server.shutdown()
