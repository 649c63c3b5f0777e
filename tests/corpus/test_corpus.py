"""The corpus (tests/corpus/ORIGINS.md) through ``tidemark run --once``, snapshot then binlog, compared
with MySQL from outside (tests/corpus/harness.py).

The default suite runs a sample (tests/corpus/sample.py) that must come out equal table for table;
the slow tier runs the whole corpus, where a table Tidemark refuses by name is acceptable and a
differing table is a failure, and the sample again under ``binlog_row_metadata=MINIMAL``.
"""

from __future__ import annotations

import pytest

from tests.corpus.corpus import all_groups, group
from tests.corpus.harness import CorpusRun, Outcome
from tests.corpus.sample import MINIMAL_SAMPLE_DBS, SAMPLE_DBS
from tests.orchestration.test_e2e_dagster import doris_standin  # noqa: F401


def _run(mysql_server, fe: str, dbs, tmp_path, base: int):
    groups = [group(db) for db in dbs] if dbs else list(all_groups())
    report = CorpusRun(mysql_server, fe, groups, tmp_path, server_id_base=base).run()
    print(report.summary())
    return report


def _formats(standin, report) -> dict[str, int]:
    """The loads the stand-in took into the report's databases, by body format."""
    dbs = {r.table.split(".")[0] for r in report.results}
    counts: dict[str, int] = {}
    for db, per_format in standin.txn_stats()["loads_by_format"].items():
        if db in dbs:
            for fmt, n in per_format.items():
                counts[fmt] = counts.get(fmt, 0) + n
    return counts


def test_the_corpus_sample_arrives_equal(mysql_server, doris_standin, tmp_path):  # noqa: F811
    """On a Doris 2.1 (the stand-in's default): the tables whose columns all have an Arrow type
    Doris reads as it is load as Arrow, snapshot and binlog, the others (a JSON column:
    cdc_core/doris/arrow_layout.py) as JSON lines, and so does a load with a DATETIME or TIMESTAMP
    before 1970-01-01 08:00:00 or a zero one; both must come out equal."""
    report = _run(mysql_server, doris_standin.fe_http, SAMPLE_DBS, tmp_path, 5600)
    assert not report.differing, report.summary()
    assert report.count(Outcome.REFUSED) == 0, report.summary()
    assert report.count(Outcome.EQUAL) >= 30, report.summary()  # sakila's 16 tables and the tests'
    assert {r.table.split(".")[0] for r in report.results} >= {*SAMPLE_DBS, *(f"{db}_b" for db in SAMPLE_DBS
                                                                             if db.startswith("mt_"))}
    formats = _formats(doris_standin, report)
    print("loads by format:", formats)
    assert formats.get("arrow", 0) > 0 and formats.get("json", 0) > 0, formats


@pytest.fixture
def private_standin(tmp_path_factory):
    """A stand-in that is a Doris 2.0: no ``format=arrow``, so every load goes as JSON lines."""
    from devstack.procs import free_port
    from devstack.stack import DorisStandIn

    standin = DorisStandIn(tmp_path_factory.mktemp("doris-2-0"), fe_port=free_port(), be_port=free_port(),
                           doris_version="2.0.15")
    standin.start()
    yield standin
    standin.stop()


@pytest.mark.slow  # ~160 s: the sample again, every load as JSON (the default suite's run loads Arrow where it can)
def test_the_corpus_sample_arrives_equal_on_a_doris_before_2_1(mysql_server, private_standin, tmp_path):
    report = _run(mysql_server, private_standin.fe_http, SAMPLE_DBS, tmp_path, 5900)
    assert not report.differing, report.summary()
    assert report.count(Outcome.EQUAL) >= 30, report.summary()
    assert set(_formats(private_standin, report)) == {"json"}


@pytest.mark.slow  # ~100 s; MINIMAL is in the default suite through tests/snapshot/test_charsets.py and the keyless and DDL tests
def test_the_corpus_sample_under_minimal_row_metadata(mysql_server, root_conn, doris_standin, tmp_path):  # noqa: F811
    """The session's server under MINIMAL (column names from the schema history), restored after."""
    with root_conn.cursor() as cur:
        cur.execute("SET GLOBAL binlog_row_metadata = 'MINIMAL'")
    try:
        report = _run(mysql_server, doris_standin.fe_http, MINIMAL_SAMPLE_DBS, tmp_path, 5700)
    finally:
        with root_conn.cursor() as cur:
            cur.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
    assert not report.differing, report.summary()
    assert report.count(Outcome.EQUAL) >= 10, report.summary()


# ~540 DDLs carried over one by one, each its schema change's Dagster run (a DDL the stream stands
# before goes to it directly, with no binlog run): 499 s on a quiet machine at 4ab56e9, 1966 s before
# that change and 3005-4140 s at load 7-17 (tests/corpus/RESULTS.md); pytest's 600 s cannot hold it
@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_the_whole_corpus_arrives_equal_or_refused_by_name(mysql_server, doris_standin, tmp_path):  # noqa: F811
    report = _run(mysql_server, doris_standin.fe_http, None, tmp_path, 5800)
    assert not report.differing, report.summary()
