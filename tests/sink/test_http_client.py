"""The Doris client's own HTTP (``cdc_core/doris/client.py``, urllib3 under it): what a load's body
looks like on the wire, which node a failure names, and that the credentials stay out of sight."""

from __future__ import annotations

import pytest

from cdc_core.doris import client as client_module
from cdc_core.doris.client import DorisResponse
from cdc_core.doris.errors import DorisConnectionError
from cdc_core.doris.rows import snapshot_row
from cdc_core.doris.sink import DorisSink
from tests.sink.conftest import PASSWORD, make_client, select, test_type_mapper


def test_a_small_body_goes_whole_and_a_large_one_chunked(doris, users, monkeypatch):
    sink = DorisSink(make_client(doris), "tm_test", type_mapper=test_type_mapper)
    sent = []
    real = sink.client._exchange

    def recording(method, url, headers, data):
        sent.append(type(data).__name__)
        return real(method, url, headers, data)

    monkeypatch.setattr(sink.client, "_exchange", recording)
    monkeypatch.setattr(client_module, "WHOLE_BODY_BYTES", 1000)
    small = sink.load(users, "chunk-0-g0", [snapshot_row({"id": i, "name": f"n{i}"}, 7) for i in range(3)])
    large = sink.load(users, "chunk-1-g0", [snapshot_row({"id": i, "name": "x" * 30}, 7) for i in range(100, 400)])
    sink.commit([small, large])
    assert "bytes" in sent and "chain" in sent, sent  # the small load whole, the large one streamed
    assert sent.count("NoneType") >= 2  # the commits: no body, Content-Length: 0
    assert len(select(sink, users, "id")) == 303
    sink.close()


def test_a_5xx_from_the_be_an_fe_redirected_to_names_that_be(doris, users):
    sink = DorisSink(make_client(doris, max_retries=1), "tm_test", type_mapper=test_type_mapper)
    doris.faults({"target": "load", "mode": "http_500", "db": users.database, "count": 2})
    with pytest.raises(DorisConnectionError) as failure:
        sink.load(users, "chunk-0-g0", [snapshot_row({"id": 1, "name": "a"}, 7)])
    text = str(failure.value)
    assert f"the Doris BE at {doris.be} (an FE redirected the request there) answered HTTP 500" in text, text
    assert PASSWORD not in text
    sink.close()


def test_an_answer_and_the_auth_header_show_no_credentials(doris):
    client = make_client(doris)
    resp = client.request("GET", "/api/health")
    assert isinstance(resp, DorisResponse) and resp.status_code == 200
    assert client.json_of(resp, "health")["msg"] == "success"
    assert resp.url == f"http://{doris.fe}/api/health"
    assert client._auth.header.startswith("Basic ") and repr(client._auth) == "<Basic auth>"
    assert client._auth.header not in repr(vars(client))  # the header (base64 of user:password) is never shown
    client.close()
