"""The chunk parity check on character keys: the same in-database checksums as any other key, by the
bytes of the key's text on both sides (MySQL's collation ranges are not Doris's byte ranges), and a
row changed behind Tidemark's back in a text-keyed table is caught, and named by ``tidemark verify``."""

from __future__ import annotations

from devstack.pipeline_file import write_pipeline as write_pipeline_file
from tests.jobs.test_verify import committed_snapshot

# Keys whose collation order is not their byte order: case ('B' < 'a' in bytes, after it under _ci),
# accents ('é' sorts with 'e' under _ci, after 'z' in bytes), multi-byte text (3- and 4-byte UTF-8),
# trailing spaces ('a ' equals 'a' under a PAD SPACE collation), all chunk bounds among them.
CI_KEYS = ("CONCAT(ELT(1 + seq % 5, 'a', 'B', 'é', '日本', 'Z'), LPAD(seq, 4, '0'), "
           "IF(seq % 7 = 0, ' ', ''))")


def write_pipeline(mysql_server, doris_standin, state_dir, tables: str) -> str:
    state_dir.mkdir(parents=True, exist_ok=True)
    return str(write_pipeline_file(state_dir / "pipeline.yaml", host="127.0.0.1", port=mysql_server.endpoint.port,
                                   fe=doris_standin.fe_http, tables=tables, name=f"test_{state_dir.name}",
                                   state_dir=state_dir, source={"scan.incremental.snapshot.chunk.size": 40}))


def test_text_keyed_chunks_are_compared_in_the_databases_and_a_change_behind_our_back_is_caught(
        mysql_server, doris_standin, root_conn, fresh_db, tmp_path, spark_session):
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.ci (k VARCHAR(32) PRIMARY KEY, n INT, note VARCHAR(20)) "
                    "DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_general_ci")
        cur.execute(f"INSERT INTO `{fresh_db}`.ci SELECT {CI_KEYS}, seq, CONCAT('n', seq) FROM `{fresh_db}`.seq_1_to_400")
        cur.execute(f"INSERT INTO `{fresh_db}`.ci VALUES ('😀', -1, 'emoji'), ('', -2, 'empty'), ('Ä', -3, NULL)")
        # a byte-ordered collation without padding: 'a', 'A', 'a ' and 'a  ' are four keys
        cur.execute(f"CREATE TABLE `{fresh_db}`.nopad (k VARCHAR(32) PRIMARY KEY, n INT) "
                    "DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin")
        cur.execute(f"INSERT INTO `{fresh_db}`.nopad SELECT CONCAT(ELT(1 + seq % 4, 'a', 'A', 'a ', 'a  '), seq), seq "
                    f"FROM `{fresh_db}`.seq_1_to_200")
        cur.execute(f"INSERT INTO `{fresh_db}`.nopad VALUES ('a', 0), ('A', 0), ('a ', 0), ('a  ', 0)")
        # latin1: MySQL's bytes are not Doris's UTF-8
        cur.execute(f"CREATE TABLE `{fresh_db}`.latin (k VARCHAR(32) PRIMARY KEY, n INT) "
                    "DEFAULT CHARSET latin1 COLLATE latin1_swedish_ci")
        cur.execute(f"INSERT INTO `{fresh_db}`.latin SELECT CONCAT(ELT(1 + seq % 3, 'å', 'Z', 'e'), seq), seq "
                    f"FROM `{fresh_db}`.seq_1_to_200")
        for table in ("ci", "nopad", "latin"):
            cur.execute(f"ANALYZE TABLE `{fresh_db}`.{table}")
            cur.fetchall()
    path = write_pipeline(mysql_server, doris_standin, tmp_path / "state", f"{fresh_db}.\\.*")
    service, keys = committed_snapshot(path)
    rows = {"ci": 403, "nopad": 204, "latin": 200}
    results = dict(zip(keys, service.chunks_parity(keys), strict=True))
    for table, count in rows.items():
        mine = [r for k, r in results.items() if k.startswith(f"{fresh_db}.{table}#")]
        assert len(mine) > 3, f"{table}: the test wants several chunks, bounds among the traps"
        assert all(r.ok for r in mine), [r for r in mine if not r.ok]
        assert sum(r.mysql_rows for r in mine) == count  # every row in exactly one segment, on both sides
        assert all(r.detail["key_order"].startswith("bytes") and "by_rows" not in r.detail for r in mine)
    # bounds whose collation order is not their byte order (case, accents) are said to be by bytes
    assert any("note" in r.detail for k, r in results.items() if k.startswith(f"{fresh_db}.ci#"))
    # the single-chunk entry point (the asset check of one partition) gives the same results
    for key in keys[:3]:
        assert service.chunk_parity(key) == results[key]

    # behind Tidemark's back: no binlog event, so nothing will ever bring these to Doris
    with root_conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        assert cur.execute(f"UPDATE `{fresh_db}`.ci SET note = 'changed' WHERE k = 'é0002'") == 1
        assert cur.execute(f"DELETE FROM `{fresh_db}`.ci WHERE k = 'B0021 '") == 1
        assert cur.execute(f"UPDATE `{fresh_db}`.nopad SET n = 99 WHERE k = 'a '") == 1  # not 'a', 'A' or 'a  '
        assert cur.execute(f"UPDATE `{fresh_db}`.latin SET n = 99 WHERE k = 'å3'") == 1
        cur.execute("SET SESSION sql_log_bin = 1")
    after = dict(zip(keys, service.chunks_parity(keys), strict=True))
    for table in rows:
        assert any(not r.ok for k, r in after.items() if k.startswith(f"{fresh_db}.{table}#")), table
    changed = [r for r in after.values() if not r.ok]
    assert len(changed) <= 5  # caught in the segments holding the keys, not everywhere
    verdicts = {v.table_id: v for v in service.verify()}
    assert set(verdicts[f"{fresh_db}.ci"].differing_keys) == {("é0002",), ("B0021 ",)}
    assert verdicts[f"{fresh_db}.nopad"].differing_keys == (("a ",),)
    assert verdicts[f"{fresh_db}.latin"].differing_keys == (("å3",),)
    service.close()


def test_mysql_side_of_a_text_key_is_cut_into_parts_that_cover_every_key_once():
    """``_parts``: MySQL's by-bytes statement runs in contiguous ranges of its own order cut at chunk
    starts, as even in chunks as they allow; their segments add up to the table's."""
    from cdc_core.pipeline.parity import chunk_parity as cp

    assert cp._parts("k", []) == [None]  # one chunk: one statement
    (first, second) = cp._parts("k", ["m"])  # two chunks
    assert (first.start, first.end, second.start, second.end) == (None, "m", "m", None)
    (first, second) = cp._parts("k", ["c", "m"])  # three chunks: the first alone, then the other two
    assert (first.end, second.start) == ("c", "c")
    (first, second) = cp._parts("k", ["c", "m", "t"])  # four: two and two
    assert (first.end, second.start) == ("m", "m")
