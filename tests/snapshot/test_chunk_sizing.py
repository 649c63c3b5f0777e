"""Chunk sizes when the pipeline file sets none: by each table's row width (cdc_core/mysql/chunk_sizing.py)."""

from __future__ import annotations

from cdc_core.config import load_pipeline
from cdc_core.mysql.chunk_sizing import (
    FLINK_DEFAULT_ROWS,
    MAX_AUTO_ROWS,
    MIN_AUTO_ROWS,
    TARGET_CHUNK_BYTES,
    auto_chunk_rows,
)
from cdc_core.pipeline.keys import chunk_key
from cdc_core.pipeline.results import PlanSource
from cdc_core.pipeline.service import PipelineService
from tests.snapshot.conftest import analyze, run


def test_auto_chunk_rows_follow_the_row_width_within_bounds():
    assert auto_chunk_rows(100) == MAX_AUTO_ROWS  # narrow rows: the cap
    assert auto_chunk_rows(1000) == TARGET_CHUNK_BYTES // 1000
    assert auto_chunk_rows(10_000_000) == MIN_AUTO_ROWS  # huge rows: the floor
    assert auto_chunk_rows(None) == auto_chunk_rows(0) == FLINK_DEFAULT_ROWS  # unknown: Flink's default


def _pipeline(tmp_path, mysql_server, db: str, chunk_size: int | None):
    ep = mysql_server.endpoint
    path = tmp_path / f"p{chunk_size}.yaml"
    size = f"  scan.incremental.snapshot.chunk.size: {chunk_size}\n" if chunk_size else ""
    path.write_text(
        "source:\n  type: mysql\n"
        f"  hostname: {ep.host}\n  port: {ep.port}\n  username: {ep.user}\n  password: {ep.password}\n"
        f"  tables: {db}.\\.*\n{size}"
        "sink:\n  type: doris\n  fenodes: 127.0.0.1:8030\n  username: root\n"
        f"pipeline:\n  tidemark.state.dir: {tmp_path / f'state{chunk_size}'}\n"
    )
    return load_pipeline(path)


def test_unset_chunk_size_sizes_each_table_by_its_rows_and_a_set_one_applies_to_all(
        mysql_server, root_conn, fresh_db, tmp_path):
    # narrow: ~40 bytes a row; wide: ~3 KB a row (a 2,000-character latin1 CHAR, stored in full)
    run(root_conn,
        f"CREATE TABLE `{fresh_db}`.narrow (id INT PRIMARY KEY, v INT)",
        f"INSERT INTO `{fresh_db}`.narrow SELECT seq, seq FROM `{fresh_db}`.seq_1_to_20000",
        f"CREATE TABLE `{fresh_db}`.wide (id INT PRIMARY KEY, pad CHAR(255) CHARACTER SET latin1, "
        "pad2 CHAR(255) CHARACTER SET latin1, body TEXT)",
        f"INSERT INTO `{fresh_db}`.wide SELECT seq, 'a', 'b', REPEAT('x', 60000) FROM `{fresh_db}`.seq_1_to_2000")
    analyze(root_conn, fresh_db, "narrow", "wide")
    with root_conn.cursor() as cur:
        cur.execute("SELECT TABLE_NAME, AVG_ROW_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
                    (fresh_db,))
        widths = dict(cur.fetchall())
    wide_rows = auto_chunk_rows(widths["wide"])
    assert wide_rows < 2000 and auto_chunk_rows(widths["narrow"]) >= 20000, widths

    definition = _pipeline(tmp_path, mysql_server, fresh_db, None)
    preview = PipelineService.next_plan(definition)  # `tidemark splits` before the first run
    assert preview.source is PlanSource.COMPUTED
    auto = PipelineService(definition)
    try:
        keys = auto.plan_splits().chunk_keys
    finally:
        auto.close()
    per_table = {t: sum(1 for k in keys if k.startswith(f"{fresh_db}.{t}#")) for t in ("narrow", "wide")}
    assert per_table["narrow"] == 1  # 20,000 narrow rows fit one chunk
    assert per_table["wide"] > 1, (per_table, widths)  # 2,000 wide rows need several chunks

    # `tidemark splits` showed the plan the pipeline then made
    assert [chunk_key(str(s.table_id), s.index) for s in preview.splits] == list(keys)

    fixed = PipelineService(_pipeline(tmp_path, mysql_server, fresh_db, 5000))
    try:
        keys = fixed.plan_splits().chunk_keys
    finally:
        fixed.close()
    assert sum(1 for k in keys if k.startswith(f"{fresh_db}.narrow#")) == 4  # 20,000 / 5,000
    assert sum(1 for k in keys if k.startswith(f"{fresh_db}.wide#")) == 1  # 2,000 ≤ 5,000
