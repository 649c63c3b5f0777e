"""``YEAR(2)`` (MariaDB still creates it): the snapshot read MySQL's two-digit display (``0`` for the
year 2000, ``99`` for 1999) while the binlog carries the year itself (2000, 1999), so one table
held both forms in Doris. Found by the corpus (tests/corpus/, MariaDB's ``type_year`` test). Both
paths now give the year, as docs/configuration.md's type table says (``YEAR`` → ``INT``, "the year")."""

from __future__ import annotations

from cdc_core.model.schema import TableId
from cdc_core.mysql.binlog_status import read_current_offset
from cdc_core.mysql.discovery import read_table_schema
from tests.snapshot.conftest import run
from tests.snapshot.test_types import _binlog_reader_rows, _snapshot_rows


def test_year2_is_the_year_on_both_paths(root_conn, fresh_db, text_conn, settings):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.y2 (id INT PRIMARY KEY, y YEAR, y2 YEAR(2))")
    with root_conn.cursor() as cur:
        low = read_current_offset(cur)
    run(root_conn, f"INSERT INTO `{fresh_db}`.y2 VALUES (1, 1999, 1999), (2, 2000, 0), (3, 2069, 69), "
                   "(4, 1970, 70), (5, 0, NULL)")
    run(root_conn, f"CREATE TABLE `{fresh_db}`.k2 (yy YEAR(2), c2 CHAR(4))",
        f"INSERT INTO `{fresh_db}`.k2 (c2) VALUES (NULL), ('1970'), ('2000')", f"UPDATE `{fresh_db}`.k2 SET yy = c2")
    with root_conn.cursor() as cur:
        high = read_current_offset(cur)
    schema = read_table_schema(text_conn, TableId(fresh_db, "y2"))
    want = {1: (1999, 1999), 2: (2000, 2000), 3: (2069, 2069), 4: (1970, 1970), 5: (0, None)}
    snapshot = _snapshot_rows(settings, schema, expect_text_fallback=False)
    binlog = _binlog_reader_rows(settings, schema, low, high)
    assert {k: (r["y"], r["y2"]) for k, r in snapshot.items()} == want
    assert {k: (r["y"], r["y2"]) for k, r in binlog.items()} == want
    keyless = read_table_schema(text_conn, TableId(fresh_db, "k2"))
    from cdc_core.mysql.binlog_reader import BinlogSplitReader
    from cdc_core.mysql.types import DorisValueConverter
    from tests.snapshot.conftest import server_id_range

    binlog = BinlogSplitReader(settings, server_id_range()[0], lambda _t: keyless, DorisValueConverter("UTC"))
    updates = [e.after for e in binlog.read_range(low, high, {keyless.table_id}) if getattr(e, "before", None) is not None]
    assert sorted((r["yy"], r["c2"]) for r in updates) == [(1970, "1970"), (2000, "2000")]
