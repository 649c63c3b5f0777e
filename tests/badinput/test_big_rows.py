"""Rows near ``max_allowed_packet``: a row of a few MB by snapshot and by binlog (an UPDATE's event
carries it twice: before and after); a value Doris cannot hold is refused naming the table, the
key, the column and the Doris setting to raise, and nothing is loaded."""

from __future__ import annotations

import pytest

from jobs.spark_executor import spark_service
from tests.badinput.test_identifiers import IN_PROCESS, catch_up, sql
from tests.jobs.conftest import doris_query

PACKET = 4 * 1024 * 1024  # the server's max_allowed_packet for these tests
PIECE = 900_000  # under Doris's default 1 MB (1048576 bytes) STRING limit


@pytest.fixture
def small_packets(root_conn):
    """``max_allowed_packet`` at 4 MB on the test server (new connections), restored afterwards."""
    with root_conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.max_allowed_packet")
        (before,) = cur.fetchone()
        cur.execute(f"SET GLOBAL max_allowed_packet = {PACKET}")
    yield PACKET
    with root_conn.cursor() as cur:
        cur.execute(f"SET GLOBAL max_allowed_packet = {int(before)}")


def test_a_row_of_three_quarters_of_max_allowed_packet_by_snapshot_and_binlog(small_packets, pipeline_factory,
                                                                             root_conn, fresh_db, doris_standin):
    db = fresh_db
    sql(root_conn,
        f"CREATE TABLE `{db}`.big (id INT PRIMARY KEY, a LONGTEXT, b LONGTEXT, c LONGTEXT, d LONGBLOB) "
        "DEFAULT CHARSET=utf8mb4",
        # ~3.2 MB a row: three texts of 900,000 bytes (2-byte characters in one) and 600,000 bytes of blob
        f"INSERT INTO `{db}`.big VALUES (1, REPEAT('a', {PIECE}), REPEAT('é', {PIECE // 2}), REPEAT('c', {PIECE}), "
        "REPEAT(0xFF00, 300000)), (2, 'small', NULL, NULL, NULL)")
    with root_conn.cursor() as cur:
        cur.execute(f"SELECT LENGTH(a) + LENGTH(b) + LENGTH(c) + LENGTH(d) FROM `{db}`.big WHERE id = 1")
        assert 0.7 * PACKET < cur.fetchone()[0] < PACKET
    service = spark_service(pipeline_factory(f"{db}.big", pipeline=IN_PROCESS))
    try:
        keys = list(service.plan_splits().chunk_keys)
        results = service.run_chunks(keys)
        service.commit_chunks(keys)
        assert sum(r.rows for r in results) == 2
        assert doris_query(doris_standin, db, "SELECT id, LENGTH(a), LENGTH(c), b IS NULL FROM big ORDER BY id") == [
            [1, PIECE, PIECE, False], [2, 5, None, True]]
        # by binlog: an insert, an update of the big row (before and after images: ~6.5 MB in one event,
        # more than max_allowed_packet) and a big row that turns small
        sql(root_conn,
            f"INSERT INTO `{db}`.big VALUES (3, REPEAT('x', {PIECE}), REPEAT('y', {PIECE}), REPEAT('z', {PIECE}), "
            "REPEAT(0x01, 600000))",
            f"UPDATE `{db}`.big SET a = REPEAT('A', {PIECE}), d = REPEAT(0x02, 600000) WHERE id = 1",
            f"UPDATE `{db}`.big SET a = REPEAT('s', {PIECE}) WHERE id = 2",
            f"UPDATE `{db}`.big SET b = 'now small' WHERE id = 3")
        catch_up(service)
        verdicts = service.verify()
        assert verdicts[0].equal and verdicts[0].mysql_rows == 3, verdicts
        assert doris_query(doris_standin, db, "SELECT id, LEFT(a, 3), LENGTH(a), b FROM big WHERE id IN (1, 3) "
                                              "ORDER BY id") == [[1, "AAA", PIECE, "é" * (PIECE // 2)],
                                                                 [3, "xxx", PIECE, "now small"]]
    finally:
        service.close()


def test_a_value_longer_than_doris_takes_is_refused_naming_table_key_column_and_setting(
        small_packets, pipeline_factory, root_conn, fresh_db, doris_standin):
    """1.2 MB in one LONGTEXT: MySQL holds it (under max_allowed_packet), a Doris STRING column does
    not (string_type_length_soft_limit_bytes, 1 MB by default). The snapshot and the binlog batch
    fail with a message naming the table, the key, the column and the setting; nothing is loaded,
    and once the value fits (or the setting is raised), a plain run goes on."""
    from cdc_core.doris.errors import StreamLoadError
    from cdc_core.state import ChunkStatus

    db = fresh_db
    too_long = 1_200_000
    sql(root_conn,
        f"CREATE TABLE `{db}`.doc (id INT PRIMARY KEY, body LONGTEXT) DEFAULT CHARSET=utf8mb4",
        f"INSERT INTO `{db}`.doc VALUES (1, 'fits'), (7, REPEAT('x', {too_long})), (8, 'fits too')")
    service = spark_service(pipeline_factory(f"{db}.doc", pipeline=IN_PROCESS))
    try:
        keys = list(service.plan_splits().chunk_keys)
        with pytest.raises(StreamLoadError) as caught:
            service.run_chunks(keys)
        text = str(caught.value)
        assert f"Doris cannot hold a value loaded into {db}.doc: column body of the row with key (id=7) is " \
               f"{too_long:,} bytes, more than the 1,048,576 bytes" in text, text
        assert "string_type_length_soft_limit_bytes" in text and "be.conf" in text
        assert "too long than schema" in str(caught.value.__cause__)  # Doris's own words stay the cause
        assert set(service.chunk_statuses().values()) == {ChunkStatus.PENDING}
        assert doris_query(doris_standin, db, "SELECT COUNT(*) FROM doc") == [[0]]

        sql(root_conn, f"UPDATE `{db}`.doc SET body = 'short now' WHERE id = 7")
        service.run_chunks(keys)
        service.commit_chunks(keys)
        assert doris_query(doris_standin, db, "SELECT COUNT(*) FROM doc") == [[3]]

        # by binlog: the batch fails the same way and stays unloaded; the next batch after the fix goes on
        sql(root_conn, f"INSERT INTO `{db}`.doc VALUES (9, REPEAT('y', {too_long}))")
        with pytest.raises(StreamLoadError, match=r"column body of the row with key \(id=9\) is 1,200,000 bytes"):
            service.run_binlog_batch()
        assert doris_query(doris_standin, db, "SELECT COUNT(*) FROM doc") == [[3]]
        assert service.pending_transactions() == []
        # the same range is read again; compacted per key, row 9's last change is the short value
        sql(root_conn, f"UPDATE `{db}`.doc SET body = 'y' WHERE id = 9")
        catch_up(service)
        assert doris_query(doris_standin, db, "SELECT body FROM doc WHERE id = 9") == [["y"]]
        assert all(v.equal for v in service.verify())
    finally:
        service.close()
