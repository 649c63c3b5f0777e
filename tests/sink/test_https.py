"""The sink over HTTPS (issue #15 item 8): ``fenodes: https://host:port`` and ``ssl-ca``.

The stand-in serves HTTPS on both ports with a certificate signed by a throw-away CA, as Doris with
``enable_https`` does; its FE then redirects loads to the BE's https address. A two-phase-commit
stream load and the query API go through with the CA verified; a client that trusts another CA
fails at once, naming the sink's ``ssl-ca``; a plain-HTTP client gets nothing from the HTTPS ports.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
import requests

from cdc_core.config.sink_options import DorisSinkOptions
from cdc_core.doris.client import DorisHttpClient
from cdc_core.doris.errors import DorisConnectionError
from cdc_core.doris.rows import snapshot_row
from cdc_core.doris.sink import DorisSink
from cdc_core.model.schema import TableId
from devstack.procs import two_free_ports
from devstack.tls import make_certificates
from tests.sink.conftest import PASSWORD, StandIn, select, test_type_mapper, users_schema


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    base = tmp_path_factory.mktemp("doris-tls")
    return make_certificates(base / "ca"), make_certificates(base / "other-ca")


@pytest.fixture(scope="module")
def doris(tls_files, tmp_path_factory):  # the name puts the test in the integration tier
    fe, be = two_free_ports()
    standin = StandIn(tmp_path_factory.mktemp("doris-https"), fe_port=fe, be_port=be,
                      password=PASSWORD, tls=tls_files[0])
    standin.start()
    yield standin
    standin.stop()


def _options(doris: StandIn, ca: str | None) -> DorisSinkOptions:
    return DorisSinkOptions.model_validate({
        "type": "doris", "fenodes": f"https://{doris.fe_http}", "username": doris.user, "password": PASSWORD,
        **({"ssl-ca": ca} if ca else {}),
    })


def test_two_phase_load_and_queries_over_https_with_the_ca_verified(doris, tls_files):
    client = DorisHttpClient.from_options(_options(doris, str(tls_files[0].ca)))
    assert client.scheme == "https" and client.fenodes == (doris.fe_http,)
    sink = DorisSink(client, "tm_https", type_mapper=test_type_mapper, table_properties={"replication_num": "1"})
    try:
        db = "https_db"
        target = TableId(db, "users")
        sink.create_table(users_schema(db))
        rows = [snapshot_row({"id": i, "name": f"n{i}", "score": Decimal("2.25")}, 10) for i in (1, 2, 3)]
        committable = sink.load(target, "chunk-0-g0", rows)  # FE 307 → the BE's https address → precommitted
        assert select(sink, target) == []
        sink.commit([committable])
        assert select(sink, target, "id, name") == [(1, "n1"), (2, "n2"), (3, "n3")]
    finally:
        sink.close()
    # The FE's redirect names the BE over https, as a Doris with enable_https does.
    resp = requests.put(f"https://{doris.fe_http}/api/{db}/users/_stream_load", auth=(doris.user, PASSWORD),
                        headers={"Expect": "100-continue", "label": "probe"}, allow_redirects=False,
                        verify=str(tls_files[0].ca), timeout=10)
    assert resp.status_code == 307
    assert resp.headers["Location"].startswith("https://")


def test_another_ca_fails_at_once_naming_the_option(doris, tls_files):
    client = DorisHttpClient.from_options(_options(doris, str(tls_files[1].ca)))
    with pytest.raises(DorisConnectionError) as failure:
        client.request("GET", "/api/backends", params={"is_alive": "true"})
    text = str(failure.value)
    assert "ssl-ca" in text and str(tls_files[1].ca) in text and "certificate verify failed" in text, text
    assert PASSWORD not in text
    assert "after" not in text  # not retried: a certificate that does not verify never will


def test_the_system_cas_do_not_trust_a_private_ca(doris):
    client = DorisHttpClient.from_options(_options(doris, None))
    with pytest.raises(DorisConnectionError, match="unset: the system CAs"):
        client.request("GET", "/api/health")


def test_plain_http_to_an_https_port_gets_no_answer(doris):
    with pytest.raises(requests.RequestException):
        requests.get(f"http://{doris.fe_http}/api/health", timeout=5)
