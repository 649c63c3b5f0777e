"""TLS options of the pipeline file, how each client is told about them, and the objects that hold a
password (issue #15 item 8). No server: the servers' side is in tests/orchestration/test_tls_e2e.py,
tests/sink/test_https.py and tests/orchestration/test_secrets.py."""

from __future__ import annotations

import ssl
from urllib.parse import parse_qs, urlsplit

import pytest

from cdc_core.config import PipelineConfigError, parse_pipeline
from cdc_core.doris.client import DorisHttpClient
from cdc_core.mysql.connection import MySqlConnectionSettings, MySqlTls, connection_error, scan_error

SECRET = "S3cr3t-Unit/pw+1"

BASE = """
source:
  type: mysql
  hostname: db.internal
  port: 3306
  username: cdc
  password: ${{PW}}
  tables: shop.orders
{source}
sink:
  type: doris
  fenodes: {fenodes}
  username: tm
  password: ${{PW}}
{sink}
"""


def _parse(source: str = "", sink: str = "", fenodes: str = "fe:8030"):
    return parse_pipeline(BASE.format(source=source, sink=sink, fenodes=fenodes), "p.yaml", env={"PW": SECRET})


def _error(**kwargs) -> str:
    with pytest.raises(PipelineConfigError) as failure:
        _parse(**kwargs)
    return str(failure.value)


def test_ssl_mode_defaults_to_preferred_and_reads_mysqls_spellings():
    assert _parse().source.ssl_mode == "preferred"
    assert _parse("  ssl-mode: VERIFY_CA\n  ssl-ca: /etc/ca.pem").source.ssl_mode == "verify-ca"
    assert _parse("  ssl-mode: verify-identity\n  ssl-ca: /etc/ca.pem").source.ssl_ca == "/etc/ca.pem"
    assert "source.ssl-mode: expected one of" in _error(source="  ssl-mode: on")


@pytest.mark.parametrize(("source", "named", "says"), [
    ("  ssl-mode: required\n  ssl-ca: /ca.pem", "source.ssl-ca", "verify-ca"),
    ("  ssl-mode: disabled\n  ssl-ca: /ca.pem", "source.ssl-ca", "no effect"),
    ("  ssl-cert: /c.pem", "source.ssl-cert", "client certificates are not supported"),
    ("  ssl-key: /k.pem", "source.ssl-key", "client certificates are not supported"),
    ("  ssl-mode: required\n  jdbc.properties.useSSL: false", "source.jdbc.properties.useSSL",
     "means ssl-mode: disabled"),
    ("  jdbc.properties.sslMode: SOMETIMES", "source.jdbc.properties.sslMode", "expected one of"),
    ("  jdbc.properties.trustCertificateKeyStoreUrl: file:/ts.jks", "source.jdbc.properties."
     "trustCertificateKeyStoreUrl", "ssl-ca"),
    ("  debezium.database.ssl.mode: required", "source.debezium.database.ssl.mode", "ssl-mode"),
])
def test_tls_settings_tidemark_would_not_apply_are_refused_naming_the_replacement(source, named, says):
    text = _error(source=source)
    assert text.startswith(f"p.yaml: {named}: "), text
    assert says in text and SECRET not in text


@pytest.mark.parametrize(("jdbc", "mode"), [
    ("useSSL: false", "disabled"),
    ("useSSL: true", "preferred"),
    ("useSSL: true\n  jdbc.properties.requireSSL: true", "required"),
    ("useSSL: true\n  jdbc.properties.verifyServerCertificate: true", "verify-ca"),
    ("sslMode: VERIFY_IDENTITY", "verify-identity"),
])
def test_connector_j_switches_read_as_the_ssl_mode_they_mean(jdbc, mode):
    assert _parse(f"  jdbc.properties.{jdbc}").source.ssl_mode == mode


def test_https_to_doris_is_the_fenodes_scheme():
    sink = _parse(fenodes="https://fe1:8030,https://fe2:8030", sink="  ssl-ca: /etc/doris-ca.pem").sink
    assert sink.https
    client = DorisHttpClient.from_options(sink)
    assert client.scheme == "https" and client.fenodes == ("fe1:8030", "fe2:8030")
    assert client.url("fe1:8030", "/api/health") == "https://fe1:8030/api/health"
    assert client.verify == "/etc/doris-ca.pem"
    plain = DorisHttpClient.from_options(_parse().sink)
    assert plain.scheme == "http" and plain.verify is True
    assert "same scheme" in _error(fenodes="https://fe1:8030,fe2:8030")
    assert "sink.ssl-ca" in _error(sink="  ssl-ca: /etc/doris-ca.pem")
    assert "sink.fenodes" in _error(fenodes="ftp://fe:8030")


def test_each_client_gets_the_mode():
    def settings(mode: str, ca: str | None = None) -> MySqlConnectionSettings:
        return MySqlConnectionSettings("db", 3306, "cdc", SECRET, 5, MySqlTls(mode, ca))

    assert settings("disabled").pymysql_kwargs()["ssl_disabled"] is True
    assert "ssl" not in settings("preferred").pymysql_kwargs()  # pymysql prefers TLS by itself
    required = settings("required").pymysql_kwargs()["ssl"]
    assert required.verify_mode == ssl.CERT_NONE and not required.check_hostname
    ca = ssl.get_default_verify_paths().cafile
    if ca:  # a CA file the verifying modes can load
        verify_ca = settings("verify-ca", ca).pymysql_kwargs()["ssl"]
        assert verify_ca.verify_mode == ssl.CERT_REQUIRED and not verify_ca.check_hostname
        assert settings("verify-identity", ca).pymysql_kwargs()["ssl"].check_hostname
        query = parse_qs(urlsplit(settings("verify-identity", ca).connectorx_uri()).query)
        assert query["ssl-mode"] == ["verify_identity"] and query["ssl-ca"] == [ca]
    # connectorx cannot fall back by itself: preferred is decided by what the control connection got
    assert "ssl-mode" not in settings("preferred").connectorx_uri()
    assert MySqlTls("preferred").resolved(offered=True) == MySqlTls("required")
    assert MySqlTls("preferred").resolved(offered=False) == MySqlTls("disabled")
    with pytest.raises(ConnectionError, match="ssl-ca '/no/such/ca.pem' is not a readable file"):
        settings("verify-ca", "/no/such/ca.pem").pymysql_kwargs()


def test_connection_failures_name_the_tls_option_and_never_the_password():
    settings = MySqlConnectionSettings("db", 3306, "cdc", SECRET, 5, MySqlTls("verify-ca", "/etc/ca.pem"))
    failure = connection_error(settings, Exception(2003, "Can't connect ([SSL: CERTIFICATE_VERIFY_FAILED] "
                                                         "certificate verify failed)"))
    assert "ssl-ca (/etc/ca.pem)" in str(failure)
    plain = MySqlConnectionSettings("db", 3306, "cdc", SECRET, 5, MySqlTls("required"))
    assert "does not offer TLS" in str(connection_error(plain, Exception(2026, "SSL is required but the server "
                                                                             "doesn't support it")))
    echoed = connection_error(plain, Exception(1045, f"Access denied; password was {SECRET}"))
    assert SECRET not in str(echoed)
    scanned = scan_error(settings, RuntimeError("timed out waiting for connection: TlsError { error:0A000086:SSL "
                                                "routines::certificate verify failed }"))
    assert scanned is not None and "ssl-ca" in str(scanned)
    assert scan_error(settings, RuntimeError("Unknown column 'x'")) is None
    gone = connection_error(plain, Exception(2003, "Can't connect to MySQL server on 'db' ([Errno 111] refused)"))
    assert "does not answer there: if it is restarting, the next run goes on" in str(gone)


def test_a_refused_login_hint_reads_plainly():
    """Issue 29, item 10: the wrong-password hint says what to check, then the TLS case in its own
    sentence naming the option's present value (was "(… needs ssl-mode: required or verify-ca; it is
    preferred)")."""
    plain = MySqlConnectionSettings("db", 3306, "cdc", SECRET, 5, MySqlTls("preferred"))
    text = str(connection_error(plain, Exception(1045, "Access denied for user 'cdc'@'x' (using password: YES)")))
    assert text.endswith("(error 1045); check username and password in the pipeline's source block. If that user "
                         "must connect over TLS (created REQUIRE SSL), also set ssl-mode: required (or verify-ca) "
                         "there; the source's ssl-mode is now preferred"), text
    assert SECRET not in text and "\n" not in text


def test_objects_holding_a_password_never_show_it():
    definition = _parse()
    settings = MySqlConnectionSettings.from_options(definition.source)
    client = DorisHttpClient.from_options(definition.sink)
    shown = [repr(definition), str(definition), repr(definition.source), repr(definition.sink),
             str(definition.source.model_dump()), str(definition.sink.model_dump()), repr(settings), str(settings),
             repr(client), repr(vars(client).get("_auth"))]
    for text in shown:
        assert SECRET not in text, text
    assert settings.password == SECRET  # held, just not shown
