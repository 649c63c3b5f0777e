"""Failures say what happened — Doris's Message, the rejected rows — and never the password."""

from __future__ import annotations

import logging

import pytest

from cdc_core.doris.client import DorisHttpClient
from cdc_core.doris.errors import (
    DorisAuthError,
    DorisConnectionError,
    DorisUnavailableError,
    StreamLoadError,
    outage_advice,
    redact,
)
from cdc_core.doris.sink import DorisSink
from tests.sink.conftest import PASSWORD, make_client, test_type_mapper


def test_filtered_rows_raise_with_message_and_error_log(sink, users, caplog):
    caplog.set_level(logging.DEBUG)
    rows = [{"id": 1, "name": "fine"}, {"id": 2, "name": "x" * 500}]  # name is VARCHAR(96)
    with pytest.raises(StreamLoadError) as info:
        sink.load(users, "chunk-0-g0", rows, sequence=1)
    err = info.value
    assert "too many filtered rows" in err.message
    assert err.error_url and err.error_log and "length of input is too long" in err.error_log
    assert "length of input is too long" in str(err)
    # nothing precommitted lingers under the label: loading good rows with it works
    c = sink.load(users, "chunk-0-g0", [{"id": 1, "name": "fine"}], sequence=1)
    sink.commit([c])
    assert PASSWORD not in caplog.text and PASSWORD not in str(err)


def test_wrong_password_says_authentication_and_hides_it(doris, users, caplog):
    caplog.set_level(logging.DEBUG)
    wrong = "Wr0ng-pass-xyz"
    bad = DorisSink(DorisHttpClient(doris.fe, "root", wrong, backoff_s=0.01), "tm_test", type_mapper=test_type_mapper)
    with pytest.raises(DorisAuthError) as info:
        bad.load(users, "chunk-0-g0", [{"id": 1}], sequence=1)
    assert "root" in str(info.value) and "password" in str(info.value)
    assert wrong not in str(info.value)
    for via in ("benodes", "auto"):
        kwargs = {"benodes": doris.be} if via == "benodes" else {"auto_redirect": False}
        s = DorisSink(DorisHttpClient(doris.fe, "root", wrong, backoff_s=0.01, **kwargs), "tm_test",
                      type_mapper=test_type_mapper)
        with pytest.raises(DorisAuthError) as info2:
            s.loader.load(users.database, users.table, "tm_test__x", [{"id": 1}])
        assert wrong not in str(info2.value)
    with pytest.raises(DorisAuthError):
        bad.catalog.execute(users.database, "SELECT 1")
    assert wrong not in caplog.text


def test_unreachable_node_error_hides_credentials(doris, caplog):
    caplog.set_level(logging.DEBUG)
    client = DorisHttpClient("127.0.0.1:1", "root", PASSWORD, max_retries=1, backoff_s=0.01)
    with pytest.raises(DorisConnectionError) as info:
        client.request("GET", "/api/health")
    assert "127.0.0.1:1" in str(info.value)
    assert PASSWORD not in str(info.value) and PASSWORD not in caplog.text


def test_redirect_location_userinfo_never_leaks(doris, users, caplog):
    caplog.set_level(logging.DEBUG)
    sink = DorisSink(make_client(doris), "tm_test", type_mapper=test_type_mapper)
    sink.commit([sink.load(users, "chunk-0-g0", [{"id": 1}], sequence=1)])
    assert PASSWORD not in caplog.text
    assert redact(f"http://root%40default_cluster:{PASSWORD}@h:1/x", [PASSWORD]) == "http://***@h:1/x"
    sink.close()


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="host:http_port"):
        DorisHttpClient("nohost", "root")
    from cdc_core.doris.stream_load import StreamLoader

    with pytest.raises(ValueError, match="sink.properties.label"):
        StreamLoader(DorisHttpClient("h:1", "root"), properties={"label": "x"})
    with pytest.raises(ValueError, match="sink.properties.strip_outer_array cannot be used"):
        StreamLoader(DorisHttpClient("h:1", "root"), properties={"strip_outer_array": "true"})
    from cdc_core.doris.payloads import PayloadBuilder

    with pytest.raises(ValueError, match="Arrow input"):
        PayloadBuilder("arrow").build([{"id": 1}], columns=["id"])


def test_a_doris_node_restarting_is_said_so_with_what_to_do():
    """What Doris answers while a node restarts reads as that, with the advice to run again; any other
    failure gets no such advice (it would not heal by waiting)."""
    assert outage_advice("RetryableAnswer: FE 127.0.0.1:8030: No backend alive.").startswith(
        "Doris has no live BE (a BE is restarting or down); run again once Doris is back")
    assert "FE is not ready" in outage_advice("HTTP 503: Service Unavailable")
    assert "cannot reach its FE" in outage_advice("[THRIFT_RPC_ERROR]Couldn't open transport for 10.0.0.1:9020")
    assert outage_advice("[DATA_QUALITY_ERROR]too many filtered rows") is None
    client = DorisHttpClient("127.0.0.1:1", "root", PASSWORD, max_retries=0)
    with pytest.raises(DorisUnavailableError, match="does not answer .*Connection refused") as info:
        client.request("GET", "/api/health")
    assert isinstance(info.value, DorisConnectionError) and "\n" not in str(info.value)
