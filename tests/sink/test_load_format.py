"""The stream-load format: Arrow where the Doris cluster reads it (2.1 and later), JSON before,
the pipeline's ``sink.properties.format`` always first (cdc_core/doris/version.py).

Two stand-ins: the session's (``doris``, a Doris 2.1 by default) and this module's own reporting
Doris 2.0.15, which refuses ``format=arrow`` as that release does. The rows are a real MariaDB
table's, of the types whose text and Arrow forms differ most (decimals, fractional and zero
datetimes, BIT, ENUM/SET, JSON, binary, unsigned BIGINT, long text, NULLs), loaded as a snapshot
chunk (Arrow typed as the snapshot types it) and as a binlog batch (with a delete and an update),
and must come out the same in Doris whatever the format.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
import requests

from cdc_core.config.pipeline import parse_pipeline
from cdc_core.doris.arrow_layout import arrow_ready, arrow_types
from cdc_core.doris.errors import StreamLoadError
from cdc_core.doris.sink import DorisSink
from cdc_core.doris.version import VERSION_PATH, DorisVersion, cluster_version, forget_versions
from cdc_core.model.schema import TableId
from cdc_core.mysql.discovery import read_table_schema
from cdc_core.mysql.types import doris_arrow_type, rows_to_doris
from cdc_core.pipeline.changes import ChangeRow, load_in_process
from devstack.procs import free_port
from jobs.specs import WriteMode, WriterSpec
from tests.sink.conftest import PASSWORD, StandIn, make_client, select

DDL = """
CREATE TABLE `{db}`.`kinds` (
  `id` BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  `amount` DECIMAL(30,10),
  `small` DECIMAL(5,2),
  `at` DATETIME(6),
  `zero_day` DATE,
  `stamp` TIMESTAMP(3) NULL,
  `flag` TINYINT(1),
  `bits` BIT(12),
  `bit1` BIT(1),
  `mood` ENUM('sad', 'ok', 'happy'),
  `tags` SET('a', 'b', 'c'),
  `doc` JSON,
  `blob` BLOB,
  `bin` VARBINARY(8),
  `ratio` FLOAT,
  `big` DOUBLE,
  `note` LONGTEXT,
  `year` YEAR,
  `span` TIME(2)
)
"""
ROWS = """
INSERT INTO `{db}`.kinds VALUES
  (18446744073709551615, 12345678901234567890.0123456789, -0.05, '2024-02-29 23:59:59.999999', '0000-00-00',
   '2024-01-02 03:04:05.678', 1, b'101010101010', b'1', 'happy', 'a,c', '{{"k": [1, 2.5, "ü"], "n": null}}',
   x'00ff10', x'cafe', 1.25, 1e300, REPEAT('ünïcødé ', 20000), 2024, '-838:59:58.99'),
  (2, 0, 0, '1000-01-01 00:00:00', '2024-05-06', NULL, 0, b'0', b'0', 'sad', '', '[]', '', '', -0.5, -2.5e-300,
   'tab\there "quoted" \\\\ back', 1901, '00:00:00'),
  (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (4, 1.5, 9.99, '2000-01-01 00:00:00.5', '1999-12-31', '2038-01-19 03:14:07.999', 1, b'111111111111', b'1', 'ok',
   'b', '"text"', x'41', x'00', 3.5, 0, 'four', 2000, '12:34:56.78')
"""
COLUMNS = ("id, amount, small, at, zero_day, stamp, flag, bits, bit1, mood, tags, doc, `blob`, bin, ratio, big, "
           "note, `year`, span")


@pytest.fixture(scope="module")
def private_standin(tmp_path_factory):
    """A stand-in that is a Doris 2.0: it reports 2.0.15 and refuses ``format=arrow``."""
    standin = StandIn(tmp_path_factory.mktemp("doris-2-0"), fe_port=free_port(), be_port=free_port(),
                      password=PASSWORD, doris_version="2.0.15")
    standin.start()
    yield standin
    standin.stop()


@pytest.fixture(autouse=True)
def _ask_again():
    forget_versions()  # each test sees its stand-ins' answers, not an earlier test's
    yield
    forget_versions()


def _sink(doris: StandIn, **kwargs) -> DorisSink:
    return DorisSink(make_client(doris), "tm_fmt", table_properties={"replication_num": "1"}, **kwargs)


@pytest.fixture
def kinds(root_conn, fresh_db):
    """The table's schema and its rows as the snapshot and the binlog path hold them (Doris values)."""
    # the zero date, as a legacy table holds it
    return _created(root_conn, fresh_db, "kinds", ["SET SESSION sql_mode = ''", DDL, ROWS])


def _created(root_conn, db: str, table: str, statements: list[str], tz: str | None = None):
    """Run ``statements`` (``{db}`` filled in), then the table's schema and its rows as the snapshot
    and the binlog path hold them (Doris values; TIMESTAMPs in ``tz`` when given)."""
    with root_conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement.format(db=db))
        cur.execute(f"SELECT * FROM `{db}`.{table} ORDER BY id")
        names = [d[0] for d in cur.description]
        raw = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    schema = read_table_schema(root_conn, TableId(db, table))
    return schema, (rows_to_doris(raw, schema) if tz is None else rows_to_doris(raw, schema, tz=tz))


def _snapshot_arrow(schema, rows) -> pa.Table:
    """The rows typed as a snapshot chunk reaches the sink (jobs/snapshot_source.py: uint64 as decimal)."""
    fields = []
    for column in schema.columns:
        t = doris_arrow_type(column)
        fields.append(pa.field(column.name, pa.decimal128(20, 0) if pa.types.is_uint64(t) else t))
    return pa.Table.from_pylist(rows, schema=pa.schema(fields))


# A JSON column's Arrow reader is not documented (cdc_core/doris/arrow_layout.py): a table with one goes
# as JSON whatever the release. The DATETIME and TIMESTAMP columns go as Arrow, but ``at`` holds
# 1000-01-01, before the Arrow path's first instant, so a load with it goes as JSON (the DATETIME
# tests below): the Arrow-only table leaves them out to keep its loads Arrow.
NOT_ARROW = ("at", "stamp", "doc")


def _arrow_ready(schema):
    """The table without the columns that keep a table's loads in JSON."""
    return schema.with_columns(tuple(c for c in schema.columns if c.name not in NOT_ARROW))


def _columns(schema) -> str:
    return ", ".join(f"`{c}`" for c in COLUMNS.replace("`", "").split(", ") if c in schema.column_names)


def _load_both_ways(sink: DorisSink, schema, rows, target: TableId) -> list[tuple]:
    """A snapshot chunk at sequence 10, then a binlog batch (an update, a delete) at 20 and 21;
    returns the table and the format the chunk went in."""
    sink.create_table(schema, target)
    chunk = _snapshot_arrow(schema, rows)
    sink.commit([sink.load(target, "chunk-0-g0", chunk, sequence=10, fresh=True)])
    by_id = {r["id"]: r for r in rows}
    updated = {**by_id[4], "note": "four, updated", "mood": "sad"}
    changes = [ChangeRow((4,), updated, False, 20, 0), ChangeRow((2,), by_id[2], True, 21, 1)]
    sink.commit(load_in_process(sink, (target,), "b-1", changes, schema))
    sent = sink.loader.format_for(chunk, arrow_ready=arrow_ready(arrow_types(sink.table(target).column_types)))
    return select(sink, target, _columns(schema), "id"), sent


def test_the_fe_reports_its_version_as_doris_does(doris, private_standin):
    for standin, text, arrow in ((doris, "doris-2.1.7-rc03", True), (private_standin, "doris-2.0.15-rc01", False)):
        body = requests.get(f"{standin.fe_url}{VERSION_PATH}", auth=(standin.user, standin.password), timeout=5).json()
        assert body["code"] == 0 and body["data"]["feVersionInfo"]["dorisBuildVersion"] == text
        version = DorisVersion.from_answer(body)
        assert version is not None and version.text == text and version.reads_arrow is arrow


def test_versions_read_as_doris_writes_them():
    def answer(**info):
        return {"msg": "success", "code": 0, "data": {"feVersionInfo": info}, "count": 0}

    assert DorisVersion.from_answer(answer(dorisBuildVersionMajor=3, dorisBuildVersionMinor=0,
                                           dorisBuildVersionPatch=3, dorisBuildVersion="doris-3.0.3-rc04")).reads_arrow
    assert DorisVersion.from_answer(answer(dorisBuildVersion="doris-2.1.0-rc01")) == DorisVersion(2, 1, 0,
                                                                                                  "doris-2.1.0-rc01")
    assert not DorisVersion.from_answer(answer(dorisBuildVersion="doris-1.2.8-rc01")).reads_arrow
    # a build from source says 0.0.0-trunk: no release, so unknown (and unknown loads JSON)
    assert DorisVersion.from_answer(answer(dorisBuildVersionMajor=0, dorisBuildVersionMinor=0,
                                           dorisBuildVersionPatch=0, dorisBuildVersion="doris-0.0.0-trunk")) is None
    assert DorisVersion.from_answer({"msg": "Not Found", "code": 404, "data": "/api/fe_version_info"}) is None


def test_rows_come_out_the_same_as_arrow_on_2_1_and_as_json_on_2_0(doris, private_standin, doris_db, kinds):
    schema, rows = kinds
    new, old = _sink(doris), _sink(private_standin)
    try:
        assert new.load_format == "arrow" and new.loads_arrow
        assert old.load_format == "json" and not old.loads_arrow
        ready = _arrow_ready(schema)
        as_arrow, sent_new = _load_both_ways(new, ready, rows, TableId(doris_db, "kinds"))
        as_json, sent_old = _load_both_ways(old, ready, rows, TableId(doris_db, "kinds"))
        assert (sent_new, sent_old) == ("arrow", "json")
        # the whole table, DATETIME and JSON columns too: JSON on the 2.1 as well (the JSON column), the same rows
        whole_new, sent_whole = _load_both_ways(new, schema, rows, TableId(doris_db, "kinds_all"))
        whole_old, _ = _load_both_ways(old, schema, rows, TableId(doris_db, "kinds_all"))
        assert sent_whole == "json" and whole_new == whole_old
        assert [r[:3] for r in whole_new] == [r[:3] for r in as_arrow]
    finally:
        new.close()
        old.close()
    assert as_arrow == as_json
    assert [r[0] for r in as_arrow] == [3, 4, 18446744073709551615]  # 2 deleted by the batch
    names = _columns(_arrow_ready(schema)).replace("`", "").split(", ")
    by_id = {r[0]: dict(zip(names, r, strict=True)) for r in as_arrow}
    assert by_id[4]["mood"] == "sad" and by_id[4]["note"] == "four, updated"  # the batch's update
    assert all(v is None for k, v in by_id[3].items() if k != "id")  # NULLs stay NULL
    top = by_id[18446744073709551615]
    # (the query API answers decimals as JSON numbers: equal to the JSON load's is the exact check)
    assert float(top["amount"]) == 12345678901234567890.0123456789 and float(top["small"]) == -0.05
    assert top["bit1"] is True and top["bits"] == 0b101010101010 and top["tags"] == "a,c"
    assert len(top["note"]) == len("ünïcødé ") * 20000


def test_the_version_is_asked_once_per_process_and_cluster(doris, doris_db, kinds):
    schema, rows = kinds
    asked: list[str] = []
    sinks = [_sink(doris), _sink(doris)]
    for s in sinks:
        request = s.client.request

        def counting(method, path, *args, _request=request, **kwargs):
            if path == VERSION_PATH:
                asked.append(path)
            return _request(method, path, *args, **kwargs)

        s.client.request = counting
    try:
        for n, s in enumerate(sinks):
            target = TableId(doris_db, f"kinds{n}")
            s.create_table(schema, target)
            for chunk in range(3):
                s.commit([s.load(target, f"chunk-{chunk}-g0", _snapshot_arrow(schema, rows), sequence=chunk,
                                 fresh=True)])
    finally:
        for s in sinks:
            s.close()
    assert asked == [VERSION_PATH]
    assert cluster_version(make_client(doris)).reads_arrow  # from the cache


def test_the_pipelines_format_wins(doris, private_standin, doris_db, kinds):
    schema, rows = kinds
    # json on a 2.1: the rows go as JSON lines (the dict path), and come out as the arrow loads' do
    chosen = _sink(doris, stream_load_properties={"format": "json"})
    plain = _sink(doris)
    try:
        assert chosen.load_format == "json" and not chosen.loads_arrow
        assert chosen.loader.format_for(_snapshot_arrow(schema, rows)) == "json"
        ready = _arrow_ready(schema)
        as_json, sent_json = _load_both_ways(chosen, ready, rows, TableId(doris_db, "kinds_json"))
        as_arrow, sent_arrow = _load_both_ways(plain, ready, rows, TableId(doris_db, "kinds_arrow"))
        assert (sent_json, sent_arrow) == ("json", "arrow") and as_json == as_arrow
    finally:
        chosen.close()
        plain.close()
    # arrow on a 2.0: sent as asked, and the 2.0 refuses it in its own words
    forced = _sink(private_standin, stream_load_properties={"format": "arrow"})
    try:
        target = TableId(doris_db, "kinds_forced")
        forced.create_table(_arrow_ready(schema), target)
        with pytest.raises(StreamLoadError, match="unknown data format, format=arrow"):
            forced.load(target, "chunk-0-g0", _snapshot_arrow(_arrow_ready(schema), rows), sequence=1, fresh=True)
    finally:
        forced.close()


def test_a_tasks_sink_takes_the_drivers_format_without_asking(doris):
    text = f"""
source: {{type: mysql, hostname: db.local, port: 3307, username: u, password: p, tables: "app.\\\\.*", ssl-mode: disabled}}
sink: {{type: doris, fenodes: "{doris.fe}", username: {doris.user}, password: "{PASSWORD}"}}
pipeline: {{name: app, tidemark.state.dir: /tmp/tm-fmt-state}}
"""
    definition = parse_pipeline(text, "app.yaml", env={})
    driver = DorisSink.from_pipeline(definition, label_epoch="e1")
    spec = WriterSpec.create(driver, definition, WriteMode.SNAPSHOT, "app.t", ["app.t"])
    assert spec.sink.load_format == "arrow"
    back = WriterSpec.from_json(spec.to_json())
    worker = back.sink.build(PASSWORD)
    worker.client.request = None  # any request to the FE would fail: the format comes from the spec
    try:
        assert worker.load_format == "arrow"
    finally:
        worker.close()
        driver.close()


def test_a_binlog_batch_builds_arrow_only_for_a_table_that_loads_arrow(doris, doris_db, kinds):
    """On a 2.1, a table whose columns all go as Arrow gets its batch as typed Arrow; one with a
    JSON column (its loads go as JSON lines) gets dicts: building Arrow only to write it out as
    JSON again costs a batch of few rows per table more than the dicts (a 300-table stream)."""
    schema, rows = kinds
    sink = _sink(doris)
    built: list[str] = []
    load = sink.load

    def observed(target, batch_id, data, **kwargs):  # our own object, observed
        built.append("arrow" if isinstance(data, pa.Table) else "dicts")
        return load(target, batch_id, data, **kwargs)

    sink.load = observed
    try:
        by_id = {r["id"]: r for r in rows}
        changes = [ChangeRow((4,), {**by_id[4], "note": "four, again"}, False, 20, 0)]
        for name, table_schema in (("ready", _arrow_ready(schema)), ("whole", schema)):
            target = TableId(doris_db, f"batch_{name}")
            sink.create_table(table_schema, target)
            assert sink.loads_arrow_into(target) is (name == "ready")
            sink.commit(load_in_process(sink, (target,), "b-1", changes, table_schema))
    finally:
        sink.close()
    assert built == ["arrow", "dicts"]


# -- DATETIME and TIMESTAMP as Arrow (cdc_core/doris/arrow_layout.py) ----------------------------

TIMES_DDL = """
CREATE TABLE `{db}`.`times` (
  `id` INT NOT NULL PRIMARY KEY,
  `d0` DATETIME,
  `d3` DATETIME(3),
  `d6` DATETIME(6),
  `ts0` TIMESTAMP NULL,
  `ts3` TIMESTAMP(3) NULL,
  `note` VARCHAR(16)
)
"""
# The wall-clock values of the Arrow path's range: its first instant (1970-01-01 08:00:00, epoch 0
# once shifted into +08:00), the last DATETIME, wall-clock times a DST change skips or repeats in
# common zones (MySQL's DATETIME holds them: it has no zone), NULLs. TIMESTAMPs are written in UTC
# and sent in America/New_York (the pipeline's zone): 13:00 UTC is 08:00 there.
TIMES_ROWS = """
INSERT INTO `{db}`.times VALUES
  (1, '1970-01-01 08:00:00', '1970-01-01 08:00:00.000', '1970-01-01 08:00:00.000000', '1970-01-01 13:00:00',
   '1970-01-01 13:00:00.001', 'first'),
  (2, '9999-12-31 23:59:59', '9999-12-31 23:59:59.999', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07',
   '2038-01-19 03:14:07.999', 'last'),
  (3, '2021-03-14 02:30:00', '2021-03-28 02:30:00.125', '2021-11-07 01:30:00.000001', '2021-03-14 07:30:00',
   '2021-11-07 06:30:00.500', 'dst'),
  (4, '2021-10-31 02:30:00', '2024-02-29 23:59:59.999', '1970-01-01 08:00:00.000001', '2021-11-07 05:30:00',
   '2000-01-01 00:00:00.000', 'more'),
  (5, NULL, NULL, NULL, NULL, NULL, 'nulls')
"""
TIMES_TZ = "America/New_York"
TIMES_COLUMNS = "id, d0, d3, d6, ts0, ts3, note"


@pytest.fixture
def times(root_conn, fresh_db):
    """The table's schema and its rows as Tidemark holds them (wall-clock text, TIMESTAMPs in New York)."""
    return _created(root_conn, fresh_db, "times", ["SET SESSION time_zone = '+00:00'", TIMES_DDL, TIMES_ROWS],
                    tz=TIMES_TZ)


def _formats_into(standin: StandIn, db: str) -> dict[str, int]:
    return dict(standin.txn_stats()["loads_by_format"].get(db, {}))


def _load_times(sink: DorisSink, schema, rows, target: TableId, early: dict | None = None) -> list[tuple]:
    """A snapshot chunk, a binlog batch (an update into the DST row, a delete, an insert), and with
    ``early`` a second chunk holding that row; the table as Doris stores it."""
    sink.create_table(schema, target)
    sink.commit([sink.load(target, "chunk-0-g0", _snapshot_arrow(schema, rows), sequence=10, fresh=True)])
    by_id = {r["id"]: r for r in rows}
    changes = [ChangeRow((3,), {**by_id[3], "d6": "2021-03-14 02:59:59.999999", "note": "dst, again"}, False, 20, 0),
               ChangeRow((4,), by_id[4], True, 21, 1),
               ChangeRow((6,), {**by_id[1], "id": 6, "ts3": "1970-01-01 08:00:00.999", "note": "new"}, False, 22, 2)]
    sink.commit(load_in_process(sink, (target,), "b-1", changes, schema))
    if early is not None:
        sink.commit([sink.load(target, "chunk-1-g0", _snapshot_arrow(schema, [early]), sequence=30, fresh=True)])
    return select(sink, target, TIMES_COLUMNS, "id")


def test_datetimes_go_as_arrow_and_land_as_the_json_path_lands_them(doris, private_standin, doris_db, times):
    """Snapshot chunk and binlog batch of DATETIME(0/3/6) and TIMESTAMP(0/3) columns: Arrow on a 2.1,
    JSON on a 2.0, the same rows stored; a chunk with a value before 1970-01-01 08:00:00 goes as JSON
    (that one load: a NOT NULL zero DATETIME, sent as 1970-01-01 00:00:00, is such a value)."""
    schema, rows = times
    early = {**rows[0], "id": 7, "d0": "1970-01-01 07:59:59", "d3": "1000-01-01 00:00:00.000",
             "d6": "1969-12-31 23:59:59.999999", "ts0": None, "ts3": None, "note": "early"}
    new, old = _sink(doris), _sink(private_standin)
    target = TableId(doris_db, "times")
    try:
        assert new.loads_arrow and not old.loads_arrow
        as_arrow = _load_times(new, schema, rows, target, early)
        as_json = _load_times(old, schema, rows, target, early)
    finally:
        new.close()
        old.close()
    # the first chunk and the batch as Arrow, the early chunk as JSON; all JSON on the 2.0
    assert _formats_into(doris, doris_db) == {"arrow": 2, "json": 1}
    assert _formats_into(private_standin, doris_db) == {"json": 3}
    assert as_arrow == as_json
    by_id = {r[0]: r for r in as_arrow}
    assert sorted(by_id) == [1, 2, 3, 5, 6, 7]
    texts = {i: tuple(None if v is None else str(v) for v in r[1:6]) for i, r in by_id.items()}
    # (the query API prints a DATETIME with its scale's digits)
    assert texts[1] == ("1970-01-01 08:00:00", "1970-01-01 08:00:00.000", "1970-01-01 08:00:00.000000",
                        "1970-01-01 08:00:00", "1970-01-01 08:00:00.001")
    assert texts[2] == ("9999-12-31 23:59:59", "9999-12-31 23:59:59.999", "9999-12-31 23:59:59.999999",
                        "2038-01-18 22:14:07", "2038-01-18 22:14:07.999")
    assert texts[3] == ("2021-03-14 02:30:00", "2021-03-28 02:30:00.125", "2021-03-14 02:59:59.999999",
                        "2021-03-14 03:30:00", "2021-11-07 01:30:00.500")
    assert texts[5] == (None,) * 5
    assert texts[6][4] == "1970-01-01 08:00:00.999" and by_id[6][6] == "new"
    assert texts[7][:3] == ("1970-01-01 07:59:59", "1000-01-01 00:00:00.000", "1969-12-31 23:59:59.999999")


def test_datetime_values_conform_to_arrow_in_the_arrow_readers_zone():
    """The text → ``timestamp[us, +08:00]`` cast: the instant a +08:00 clock shows the text, exact to
    the microsecond at both ends of the range, NULL kept; before 1970-01-01 08:00:00, a zero date or
    text that is no date does not fit (the load goes as JSON)."""
    import datetime as dt

    from cdc_core.doris.arrow_layout import ARROW_TIME_ZONE, arrow_type
    from cdc_core.doris.payloads import ArrowConformError, PayloadBuilder, conform

    target = arrow_type("DATETIMEV2(6)")
    assert target == pa.timestamp("us", tz="+08:00") == arrow_type("DATETIMEV2") and ARROW_TIME_ZONE == "+08:00"
    assert arrow_type("JSONB") is None
    texts = ["1970-01-01 08:00:00", "1970-01-01 08:00:00.000001", "9999-12-31 23:59:59.999999",
             "2021-03-14 02:30:00", "2024-02-29 23:59:59.999", None]
    out = conform(pa.table({"at": pa.array(texts)}), ["at"], None, [target]).column("at")
    assert out.type == target
    assert out.cast(pa.int64()).to_pylist()[:3] == [0, 1, 253402300799999999 - 8 * 3600 * 10**6]
    eight = dt.timezone(dt.timedelta(hours=8))
    walls = [None if v is None else v.astimezone(eight).replace(tzinfo=None).isoformat(" ", "microseconds")
             for v in out.to_pylist()]
    assert walls == [None if t is None else dt.datetime.fromisoformat(t).isoformat(" ", "microseconds")
                     for t in texts]
    # a timestamp without a zone is a wall clock too; one with a zone, its own wall clock
    naive = pa.array([dt.datetime(2021, 3, 14, 2, 30)], pa.timestamp("ms"))
    zoned = pa.array([dt.datetime(2021, 3, 14, 7, 30, tzinfo=dt.UTC)], pa.timestamp("us", tz="America/New_York"))
    for array, wall in ((naive, dt.datetime(2021, 3, 14, 2, 30)), (zoned, dt.datetime(2021, 3, 14, 3, 30))):
        got = conform(pa.table({"at": array}), ["at"], None, [target]).column("at")
        assert got.to_pylist()[0].astimezone(eight).replace(tzinfo=None) == wall
    for bad in ("1970-01-01 07:59:59.999999", "1000-01-01 00:00:00", "0000-00-00 00:00:00", "2021-02-30 00:00:00"):
        with pytest.raises(ArrowConformError, match="column at"):
            conform(pa.table({"at": pa.array([texts[0], bad])}), ["at"], None, [target])
    payload = PayloadBuilder("arrow").build(pa.table({"at": pa.array(texts)}), columns=["at"], arrow_types=[target])
    assert payload.headers["timezone"] == "+08:00" and payload.headers["format"] == "arrow"


def test_the_standin_reads_an_arrow_timestamp_as_doris_does(doris, doris_db):
    """As Doris 2.1's Arrow reader: ``from_unixtime(epoch, +08:00)`` whatever the type's zone or the
    header; a negative epoch (which Doris would store as another time) refused by name, text refused."""
    import datetime as dt

    sink = _sink(doris)
    target = TableId(doris_db, "stamps")
    try:
        sink.catalog.execute(doris_db, f"CREATE DATABASE IF NOT EXISTS `{doris_db}`")
        sink.catalog.execute(doris_db, f"CREATE TABLE `{doris_db}`.stamps (id INT, at DATETIME(6)) UNIQUE KEY(id) "
                                       "DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES ('replication_num' = '1')")

        def send(label: str, at: pa.Array, ids: tuple[int, ...] = (1,)):
            rows = pa.table({"id": pa.array(ids, pa.int32()), "at": at})  # sent as it is: no arrow_types
            sink.commit([sink.loader.load(doris_db, "stamps", label, rows, columns=["id", "at"], fmt="arrow")])

        one_second = pa.array([1_000_001], pa.timestamp("us"))  # epoch 1.000001 s
        send("naive", one_second)
        send("utc", one_second.cast(pa.timestamp("us", tz="UTC")), (2,))
        send("ms", pa.array([1_500], pa.timestamp("ms", tz="America/New_York")), (3,))
        assert [(i, str(at)) for i, at in select(sink, target, "id, at")] == [
            (1, "1970-01-01 08:00:01.000001"), (2, "1970-01-01 08:00:01.000001"), (3, "1970-01-01 08:00:01.500000")]
        with pytest.raises(StreamLoadError, match=r"column at: a timestamp before 1970-01-01 00:00:00 UTC"):
            send("negative", pa.array([dt.datetime(1969, 12, 31, 23, 59, 59)], pa.timestamp("us")), (4,))
        with pytest.raises(StreamLoadError, match="not support convert to datetimev2 from arrow type: string"):
            send("text", pa.array(["2024-01-01 00:00:00"]), (5,))
    finally:
        sink.close()
