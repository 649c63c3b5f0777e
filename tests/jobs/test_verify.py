"""Verification by checksums computed in MySQL and Doris: every supported type compares equal after a
snapshot, and a row changed behind Tidemark's back (no binlog event) is caught and named by its key,
by the chunk parity check and by ``tidemark verify``."""

from __future__ import annotations

import json

from devstack.pipeline_file import write_pipeline as write_pipeline_file
from jobs.spark_executor import spark_service
from orchestration.cli.tidemark import main

TYPES_TABLE = """CREATE TABLE `{db}`.typed (
  id INT PRIMARY KEY, flag TINYINT(1), big BIGINT UNSIGNED, small SMALLINT, amount DECIMAL(12,3),
  wide DECIMAL(50,10), name VARCHAR(40), latin VARCHAR(20) CHARACTER SET latin1, code CHAR(5), body TEXT,
  mood ENUM('sad','ok','happy'), tags SET('a','b','c'), born DATE, seen DATETIME(6), yr YEAR,
  ratio FLOAT, score DOUBLE, stamp TIMESTAMP(3) NULL, doc JSON
) DEFAULT CHARSET=utf8mb4"""


def fill_types(cur, db: str, rows: int) -> None:
    cur.execute("SET SESSION sql_mode = 'ALLOW_INVALID_DATES'")
    cur.execute(TYPES_TABLE.format(db=db))
    cur.execute(
        f"INSERT INTO `{db}`.typed SELECT seq, seq % 2, 18446744073709551615 - seq, CAST(seq AS SIGNED) - 300, seq * 1.125, "
        "seq / 7, CONCAT('näme ', seq, ' 😀'), CONCAT('café ', seq), LPAD(seq, 3, '0'), REPEAT('x', seq % 50), "
        "ELT(1 + seq % 3, 'sad', 'ok', 'happy'), ELT(1 + seq % 4, '', 'a', 'a,c', 'b,c'), "
        "'2024-02-29' + INTERVAL seq DAY, '2026-01-01 00:00:00' + INTERVAL seq * 1001 MICROSECOND, "
        "1990 + seq % 50, seq / 3, seq / 7, '2026-03-01 10:00:00' + INTERVAL seq SECOND, "
        f"JSON_OBJECT('n', seq) FROM `{db}`.seq_1_to_{rows}"
    )
    cur.execute(f"INSERT INTO `{db}`.typed (id) VALUES (0)")  # every other column NULL
    cur.execute(f"INSERT INTO `{db}`.typed (id, born, seen) VALUES (-1, '0000-00-00', '2024-00-10 00:00:00')")


def write_pipeline(mysql_server, doris_standin, state_dir, tables: str) -> str:
    state_dir.mkdir(parents=True, exist_ok=True)
    return str(write_pipeline_file(state_dir / "pipeline.yaml", host="127.0.0.1", port=mysql_server.endpoint.port,
                                   fe=doris_standin.fe_http, tables=tables, name=f"test_{state_dir.name}",
                                   state_dir=state_dir, source={"scan.incremental.snapshot.chunk.size": 200}))


def committed_snapshot(path: str):
    """The pipeline's service, with its whole snapshot planned, loaded and committed; and its chunk keys."""
    from cdc_core.config import load_pipeline

    service = spark_service(load_pipeline(path))
    keys = list(service.plan_splits().chunk_keys)
    service.run_chunks(keys)
    service.commit_chunks(keys)
    return service, keys


def test_checksums_agree_on_every_type_and_catch_a_change_behind_our_back(
        mysql_server, doris_standin, root_conn, fresh_db, tmp_path, spark_session, capsys):
    with root_conn.cursor() as cur:
        fill_types(cur, fresh_db, 700)
        cur.execute(f"CREATE TABLE `{fresh_db}`.tags (name VARCHAR(20) PRIMARY KEY, n INT) COLLATE utf8mb4_general_ci")
        cur.execute(f"INSERT INTO `{fresh_db}`.tags VALUES ('alpha', 1), ('Beta', 2), ('gamma', 3), ('Delta', 4)")
    path = write_pipeline(mysql_server, doris_standin, tmp_path / "state", f"{fresh_db}.\\.*")
    service, keys = committed_snapshot(path)
    for key in keys:
        result = service.chunk_parity(key)
        assert result.ok, result
    typed = service.table_parity(f"{fresh_db}.typed")
    assert typed.ok and typed.mysql_rows == 702
    # the in-database part covers every kind with a shared text; the rest is compared by rows
    assert set(typed.detail["by_rows"]) == {"ratio", "score", "stamp", "doc"}
    assert "latin" in typed.detail["in_database"] and "born" in typed.detail["in_database"]

    assert main(["verify", path, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["equal"] and {t["table"] for t in report["tables"]} == {f"{fresh_db}.typed", f"{fresh_db}.tags"}

    # behind Tidemark's back: no binlog event, so nothing will ever bring these to Doris
    with root_conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute(f"UPDATE `{fresh_db}`.typed SET latin = 'changé' WHERE id = 250")
        cur.execute(f"DELETE FROM `{fresh_db}`.typed WHERE id = 10")
        cur.execute(f"INSERT INTO `{fresh_db}`.typed (id, name) VALUES (100000, 'extra')")
        cur.execute(f"UPDATE `{fresh_db}`.tags SET n = 20 WHERE name = 'beta'")
        cur.execute("SET SESSION sql_log_bin = 1")
    changed_chunk = next(k for k in keys if k.startswith(f"{fresh_db}.typed") and not service.chunk_parity(k).ok)
    assert changed_chunk
    verdicts = {v.table_id: v for v in service.verify()}
    typed_verdict = verdicts[f"{fresh_db}.typed"]
    assert not typed_verdict.equal
    assert set(typed_verdict.differing_keys) == {("250",), ("10",), ("100000",)}
    assert verdicts[f"{fresh_db}.tags"].differing_keys == (("Beta",),)

    assert main(["verify", path, "--table", f"{fresh_db}.typed", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["equal"] and report["tables"][0]["differing_keys"] == [["10"], ["250"], ["100000"]]
    assert main(["verify", path, "--table", "nope.nope"]) == 2
    assert "not captured" in capsys.readouterr().err
    service.close()


def test_verify_bisects_a_large_table_down_to_the_changed_rows(mysql_server, doris_standin, root_conn, fresh_db,
                                                                tmp_path, spark_session, doris_txn_limit):
    # committed_snapshot runs every chunk of the table (150) in one run_chunks call, on Spark, against
    # Doris's default max_running_txn_num_per_db (100): the run commits them in groups within
    # tidemark.doris.max-running-txns-per-db (tests/jobs/test_doris_txn_limit.py).
    doris_txn_limit(100)
    doris_standin.reset_txn_peaks()
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.big (id BIGINT PRIMARY KEY, v VARCHAR(20), d DECIMAL(8,2))")
        cur.execute(f"INSERT INTO `{fresh_db}`.big SELECT seq, CONCAT('v', seq), seq / 100 FROM `{fresh_db}`.seq_1_to_30000")
    path = write_pipeline(mysql_server, doris_standin, tmp_path / "state", f"{fresh_db}.big")
    from cdc_core.pipeline.parity import table_verify

    service, keys = committed_snapshot(path)
    assert len(keys) > 100
    assert doris_standin.txn_stats()["databases"][fresh_db]["peak_running"] <= \
        service.definition.pipeline.doris_max_running_txns_per_db
    with root_conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute(f"UPDATE `{fresh_db}`.big SET d = 0 WHERE id IN (7, 17777, 29999)")
        cur.execute("SET SESSION sql_log_bin = 1")
    with service.context.connection():
        verdict = table_verify.verify_table(service.context, f"{fresh_db}.big")
    assert set(verdict.differing_keys) == {("7",), ("17777",), ("29999",)}
    assert verdict.mysql_rows == verdict.doris_rows == 30000
    # a big table with every chunk as a first segment: three chunks differ, the rest cost two numbers
    assert verdict.differing_segments == 3 and verdict.segments == len(keys)
    with service.context.connection():  # smaller listings: the differing chunks are bisected first
        bisected = table_verify.verify_table(service.context, f"{fresh_db}.big", rows_per_listing=50)
    assert set(bisected.differing_keys) == set(verdict.differing_keys)
    assert bisected.segments > len(keys)
    with service.context.connection():  # past max_keys, the other differing segments are only counted
        bounded = table_verify.verify_table(service.context, f"{fresh_db}.big", max_keys=1)
    assert bounded.keys_truncated and len(bounded.differing_keys) == 1 and bounded.differing_segments == 3
    assert not bounded.equal
    service.close()


def test_batched_chunk_parity_equals_chunk_by_chunk(mysql_server, doris_standin, root_conn, fresh_db, tmp_path,
                                                    spark_session):
    """The check after a snapshot run compares all its chunks of a table in one statement per side:
    the same results as chunk by chunk, and a row changed behind Tidemark's back in exactly its chunk."""
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.big (id BIGINT PRIMARY KEY, v VARCHAR(20) NOT NULL, d DECIMAL(8,2), "
                    "t DATETIME(3))")
        cur.execute(f"INSERT INTO `{fresh_db}`.big SELECT seq * 3, CONCAT('v', seq), IF(seq % 7 = 0, NULL, seq / 100), "
                    f"'2026-01-01' + INTERVAL seq SECOND FROM `{fresh_db}`.seq_1_to_5000")
    path = write_pipeline(mysql_server, doris_standin, tmp_path / "state", f"{fresh_db}.big")
    service, keys = committed_snapshot(path)
    assert len(keys) > 10
    with service.session():
        batched = service.chunks_parity(keys[1:-1] + [keys[0]])  # any subset, in any order
    assert [r.key_range for r in batched] == [service.chunk_parity(k).key_range for k in keys[1:-1] + [keys[0]]]
    assert all(r.ok for r in batched) and sum(r.mysql_rows for r in batched) == 5000 - service.chunk_parity(keys[-1]).mysql_rows
    assert batched[0].detail["statements"] == "batched"
    with root_conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute(f"UPDATE `{fresh_db}`.big SET d = NULL WHERE id = 3 * 2500")
        cur.execute("SET SESSION sql_log_bin = 1")
    results = dict(zip(keys, service.chunks_parity(keys), strict=True))
    bad = [k for k, r in results.items() if not r.ok]
    assert len(bad) == 1 and not service.chunk_parity(bad[0]).ok
    assert results[bad[0]].mysql_rows == results[bad[0]].doris_rows
    service.close()
