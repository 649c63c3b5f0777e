"""Issue 29, build 2: each expected failure a run can meet is a ``Failure`` of one line, its cause and
its fix apart in the metadata, and nothing else on the run page (``orchestration/defs/failures.py``).

The exceptions are the real ones, raised against real servers: MySQL on a port where nothing listens
and MariaDB refusing a wrong password (the source's connection), the Doris FE on a port where
nothing listens (every request the sink makes: a load, a label probe, a commit) and the stand-in
refusing a wrong password.
"""

from __future__ import annotations

import pytest

from cdc_core.doris.catalog import DorisCatalog
from cdc_core.doris.client import DorisHttpClient
from cdc_core.mysql.connection import MySqlConnectionSettings, connect
from devstack.procs import free_port
from orchestration.defs.failures import failure_for


def _raised(call) -> BaseException:
    with pytest.raises(Exception) as caught:
        call()
    return caught.value


def test_each_outage_a_run_meets_is_a_cause_and_a_fix_without_a_stack(mysql_server, doris_standin):
    ep = mysql_server.endpoint
    nowhere = f"127.0.0.1:{free_port()}"
    raised = {
        "mysql down": _raised(lambda: connect(MySqlConnectionSettings("127.0.0.1", free_port(), ep.user, ep.password,
                                                                      connect_timeout=2))),
        "mysql refused login": _raised(lambda: connect(MySqlConnectionSettings(ep.host, ep.port, ep.user, "wrong"))),
        "doris down": _raised(lambda: DorisHttpClient(nowhere, "root", max_retries=1, backoff_s=0.01).request(
            "PUT", "/api/db/_stream_load_2pc")),
        "doris refused login": _raised(lambda: DorisCatalog(DorisHttpClient(doris_standin.fe_http, "root", "wrong"))
                                       .execute("information_schema", "SHOW DATABASES")),
    }
    fixes = {"mysql down": "if it is restarting, the next run goes on once it is up; otherwise check hostname and port",
             "mysql refused login": "check username and password in the pipeline's source block",
             "doris down": "check that the FE is up and that sink.fenodes names its HTTP address (host:8030)",
             "doris refused login": "check the sink's username and password"}
    for name, exc in raised.items():
        failure = failure_for(exc)
        line = failure.description
        assert "\n" not in line and "Traceback" not in line and "wrong" not in line, (name, line)
        metadata = {key: value.value for key, value in failure.metadata.items()}
        assert metadata["fix"].startswith(fixes[name]), (name, line)
        assert metadata["cause"] and line.startswith(metadata["cause"]) and line.endswith(metadata["fix"]), line
        [error] = failure.user_code_process_error_infos  # what Dagster stores and the run page shows
        assert (error.message, error.stack, error.cause) == (line, [], None), name
    assert raised["doris down"].args[0].startswith(f"the Doris FE at {nowhere} does not answer (ConnectionError "
                                                   "([Errno 111] Connection refused); 2 attempts at PUT "
                                                   "/api/db/_stream_load_2pc); check that the FE is up")
