"""Read one chunk lock-free: low watermark, range scan, high watermark, binlog backfill.

Flink CDC's ``MySqlSnapshotSplitReadTask``:

1. **low watermark** (LW) = the server's binlog end (``SHOW MASTER STATUS``);
2. the chunk's half-open range scan, built as Flink's ``buildSplitScanQuery`` builds it
   (``k >= ? AND NOT (k = ?) AND k <= ?``; first chunk ``k <= ? AND NOT (k = ?)``, last
   ``k >= ?``), streamed as Arrow record batches of ``scan.snapshot.fetch.size`` rows by
   connectorx and converted column-wise to Doris values (``cdc_core.mysql.types``);
3. **high watermark** (HW) = the binlog end again (HW := LW with ``backfill.skip``);
4. if HW > LW, the binlog ``(LW, HW]`` of this table is read and its inserts, updates and deletes
   whose chunk key falls in the chunk's range are applied to the buffered rows
   (:func:`~cdc_core.mysql.backfill.apply_backfill`, Flink's ``RecordUtils.upsertBinlog`` normalisation).

The result is the chunk exactly as it was at HW: every row change before HW is either in the
scan (which saw the table at some instant between LW and HW) or replayed from the binlog, and
replaying full row images in order ends at the last image of each key whatever the scan saw.

One deviation from Flink, for exactness: when the chunk key is nullable (a non-primary-key
``chunk.key-column``) the first chunk also takes the rows whose key is NULL — Flink's
``k <= ?`` silently drops them.

**Watermarks shared by consecutive chunks.** Correctness needs only LW ≤ the scan's snapshot
point ≤ HW (Flink CDC's watermark algorithm): the backfill replays ``(LW, HW]`` onto the scan,
and replaying the changes the scan already saw is harmless, since each key ends at its last
image. So a reader that has just read chunk N (of any table: the watermark is the server's
position) takes chunk N's HW as chunk N+1's LW — it was read before chunk N+1's SELECT began —
and asks the server once per chunk, not twice. The backfill window is then at most wider (it
also spans chunk N's load), never missing a change; when no transaction committed anywhere in
it, LW = HW still skips the backfill. A HW is carried only while all of these hold, else the
chunk takes a fresh LW:

* the chunk just read succeeded and nothing since failed: any error in :meth:`read` drops it,
  and a caller whose load of the chunk failed calls :meth:`forget_watermark` (the fused and local
  workers' ``jobs/fused_chunks.py`` does), so a retried chunk takes a fresh LW. (Were one carried
  into a retry, it would still be correct: it was read before the retry's SELECT.);
* both chunks belong to one snapshot job (``job``, a token the driver draws per job: the worker
  keeps its reader across jobs and pipelines). A job's chunks are read back to back; a later
  job — a partition maintenance's reload, a resnapshot, another pipeline's snapshot — may start
  after a statement that changed rows without row events (``DROP``/``TRUNCATE PARTITION``,
  ``TRUNCATE TABLE``), and a window reaching back before it would replay row events of rows that
  statement removed into the chunk. Within one job that window is the one the algorithm has
  anyway: such a statement while the job reads stops the stream, whose reload rereads the table;
* the control connection it was read on is the one still open (:meth:`close` drops it; a new
  connection may reach another server after a failover, whose positions do not compare);
* the carried and the new watermark name the same server (checked after the fact; a mismatch
  re-reads the chunk with fresh watermarks);
* it is younger than :data:`WATERMARK_REUSE_S` (a reader kept idle between jobs starts fresh:
  no long backfill window, no binlog that a purge may have removed);
* the table has a primary key: a keyless table's rows are a multiset, and replaying an insert
  the scan already saw would add a copy, so its LW stays the server's position right before
  its SELECT (as narrow a window as the algorithm allows);
* ``backfill.skip`` is off (there HW := LW, and a carried LW would pin every HW to the first).

Watermarks are carried as the server reported them and aligned to the job's epoch
(``epoch_reference``) when used, so a reader kept across jobs never carries an old epoch.

The backfill's key ranges and the replay are in :mod:`cdc_core.mysql.backfill`; the server id a
backfill reads the binlog with comes from :mod:`cdc_core.mysql.server_ids`.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from cdc_core.model.events import DataChangeEvent
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.backfill import KeyRange, apply_backfill
from cdc_core.mysql.binlog_reader import BinlogSplitReader
from cdc_core.mysql.binlog_status import CurrentOffsetReader
from cdc_core.mysql.connection import (
    SESSION_TIME_ZONE,
    MySqlConnectionSettings,
    MySqlTls,
    connect,
    quote_ident,
    quote_table,
    scan_error,
    session_uses_tls,
)
from cdc_core.mysql.discovery import chunk_key_column
from cdc_core.mysql.failover import align
from cdc_core.mysql.server_ids import acquire_server_id
from cdc_core.mysql.splits import SnapshotSplit, key_literal
from cdc_core.mysql.types import (
    DorisValueConverter,
    TypeKind,
    arrow_to_doris,
    doris_arrow_type,
    kind_of,
    parse_tz,
    select_expression,
)
from cdc_core.mysql.types.charsets import UndecodableTextError
from cdc_core.mysql.types.kinds import precision_scale

log = logging.getLogger(__name__)

WATERMARK_REUSE_S = 5.0
"""How long a chunk's high watermark may serve as the next chunk's low watermark (module doc)."""


@dataclass(frozen=True)
class _Carried:
    """A chunk's high watermark as the server reported it, kept for the next chunk's low watermark."""

    offset: BinlogOffset
    conn: Any
    at: float
    job: str


class BinlogRangeReader(Protocol):
    """What a backfill needs from the binlog reader (``cdc_core.mysql.binlog_reader``)."""

    def read_range(self, start: BinlogOffset, stop: BinlogOffset,
                   tables: set[TableId]) -> Iterable[Any]: ...


BinlogReaderFactory = Callable[[MySqlConnectionSettings, int, TableSchema, DorisValueConverter], BinlogRangeReader]


@dataclass(frozen=True)
class ChunkReadResult:
    """One chunk as it was at ``high_watermark``: rows as Doris values in Arrow."""

    split: SnapshotSplit
    table: pa.Table
    low_watermark: BinlogOffset
    high_watermark: BinlogOffset
    backfill_events: int = 0
    scanned_rows: int = 0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return self.table.num_rows


# -- the scan query ----------------------------------------------------------------------------


def build_scan_query(schema: TableSchema, split: SnapshotSplit, key: Column, *,
                     tinyint1_as_boolean: bool = True, safe: bool = False, where: str | None = None) -> str:
    """The chunk's SELECT with literals inlined (connectorx takes no bind parameters); ``where``
    replaces the chunk's key-range condition (a repair reads rows by key)."""
    projection = ", ".join(select_expression(c, tinyint1_as_boolean=tinyint1_as_boolean, safe=safe)
                           for c in schema.columns)
    sql = f"SELECT {projection} FROM {quote_table(schema.table_id.database, schema.table_id.table)}"
    where = where or scan_condition(split, key)
    return f"{sql} WHERE {where}" if where else sql


def scan_condition(split: SnapshotSplit, key: Column) -> str | None:
    """Flink's ``buildSplitScanQuery`` condition for one chunk-key column."""
    k = quote_ident(key.name)
    if split.start is None and split.end is None:
        return None
    if split.start is None:
        end = key_literal(key, split.end[0])  # type: ignore[index]
        condition = f"{k} <= {end} AND NOT ({k} = {end})"
        return f"(({condition}) OR {k} IS NULL)" if key.nullable else condition
    start = key_literal(key, split.start[0])
    if split.end is None:
        return f"{k} >= {start}"
    end = key_literal(key, split.end[0])
    return f"{k} >= {start} AND NOT ({k} = {end}) AND {k} <= {end}"


def _not_utf8(schema: TableSchema) -> UndecodableTextError:
    """A text value the server sends as bytes that are no UTF-8: the read stops, nothing is replaced."""
    columns = [c.name for c in schema.columns if (c.charset or "").lower() in _SURROGATE_CHARSETS]
    where = f" (its columns that can hold one: {', '.join(columns)})" if columns else ""
    return UndecodableTextError(
        f"table {schema.table_id} holds text the server sends as bytes that are not UTF-8, so no Doris value "
        "can carry it; the value is not replaced. MariaDB allows one such value: a lone UTF-16 surrogate "
        f"(0xD800-0xDFFF) in a ucs2/utf16/utf32/utf8 column{where}. Fix: correct the stored value at the source")


_SURROGATE_CHARSETS = {"ucs2", "utf16", "utf16le", "utf32", "utf8", "utf8mb3", "utf8mb4"}


def _default_binlog_reader(settings: MySqlConnectionSettings, server_id: int, schema: TableSchema,
                           converter: DorisValueConverter) -> BinlogRangeReader:
    return BinlogSplitReader(settings, server_id, lambda _t: schema, converter)


# -- the reader ---------------------------------------------------------------------------------


class SnapshotSplitReader:
    """Reads chunks of captured tables; one instance per worker, reusable for many chunks.

    ``pause_after_low_watermark`` is called with the split right after the low watermark is
    taken, ``pause_after_scan`` after the range scan and before the high watermark — tests use
    them to write inside the chunk's window (seen by the scan, or only by the backfill).
    """

    def __init__(
        self,
        settings: MySqlConnectionSettings,
        *,
        server_id_range: tuple[int, int] = (5400, 6400),
        server_time_zone: str | dt.tzinfo | None = "UTC",
        tinyint1_as_boolean: bool = True,
        fetch_size: int = 1024,
        backfill_skip: bool = False,
        binlog_reader_factory: BinlogReaderFactory | None = None,
        pause_after_low_watermark: Callable[[SnapshotSplit], None] | None = None,
        pause_after_scan: Callable[[SnapshotSplit], None] | None = None,
        chunk_key_column: str | None = None,
        epoch_reference: BinlogOffset | None = None,
    ):
        self.settings = settings
        # The pipeline's offset that decides the epoch of this reader's watermarks (failover.align):
        # after a failover they must outrank what the stream wrote on the new server (epoch ≥ 1).
        self.epoch_reference = epoch_reference
        self.server_id_range = server_id_range
        self.tz = parse_tz(server_time_zone)
        self.tinyint1_as_boolean = tinyint1_as_boolean
        self.fetch_size = fetch_size
        self.backfill_skip = backfill_skip
        self._binlog_factory = binlog_reader_factory or _default_binlog_reader
        self.pause_after_low_watermark = pause_after_low_watermark
        self.pause_after_scan = pause_after_scan
        self.chunk_key_column = chunk_key_column
        self._converter = DorisValueConverter(self.tz, tinyint1_as_boolean)
        self._conn: Any = None
        self._server_id: int | None = None
        self._safe_tables: set[TableId] = set()
        self._scan_tls: MySqlTls | None = None
        self._carried: _Carried | None = None
        self._offsets = CurrentOffsetReader()

    @classmethod
    def from_source(cls, source: Any, **kwargs: Any) -> SnapshotSplitReader:
        """From ``MySqlSourceOptions``."""
        return cls(
            MySqlConnectionSettings.from_options(source),
            server_id_range=source.server_id_range(),
            server_time_zone=source.server_time_zone or "UTC",
            tinyint1_as_boolean=source.tinyint1_as_boolean,
            fetch_size=source.fetch_size,
            backfill_skip=source.backfill_skip,
            chunk_key_column=source.chunk_key_column,
            **kwargs,
        )

    # -- lifecycle ---------------------------------------------------------------------------------

    def _control(self) -> Any:
        if self._conn is None:
            # several statements a query: a watermark in one round trip (binlog_status.CurrentOffsetReader)
            self._conn = connect(self.settings, text_values=True, multi_statements=True)
            self._offsets = CurrentOffsetReader()
        return self._conn

    @property
    def server_id(self) -> int:
        """This reader's server id for backfills (taken on first use, held until :meth:`close`)."""
        if self._server_id is None:
            self._server_id = acquire_server_id(self._control(), self.server_id_range, wait_s=30.0)
        return self._server_id

    def close(self) -> None:
        self._carried = None
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None
                self._server_id = None
                self._scan_tls = None

    def __enter__(self) -> SnapshotSplitReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------------------

    def key_column(self, schema: TableSchema, split: SnapshotSplit) -> Column:
        """The split's chunk key: named in the split, else as the splitter chose it (the first
        primary-key column or ``scan.incremental.snapshot.chunk.key-column``)."""
        if split.key_columns:
            return schema.column(split.key_columns[0])
        return chunk_key_column(schema, self.chunk_key_column)

    def scan_tls(self) -> MySqlTls:
        """The chunk scans' TLS: the source's ``ssl-mode``, with ``preferred`` decided by what the
        control connection got (connectorx cannot fall back to plain TCP by itself)."""
        if self._scan_tls is None:
            tls = self.settings.tls
            self._scan_tls = tls.resolved(session_uses_tls(self._control())) if tls.mode == "preferred" else tls
        return self._scan_tls

    def current_offset(self) -> BinlogOffset:
        """The server's position now, in the pipeline's epoch on this server (``epoch_reference``)."""
        return align(self._server_offset(), self.epoch_reference)

    def _server_offset(self) -> BinlogOffset:
        conn = self._control()
        with conn.cursor() as cur:
            return self._offsets.read(cur)

    def forget_watermark(self) -> None:
        """Take a fresh low watermark for the next chunk (the last chunk's load failed: module doc)."""
        self._carried = None

    def _low_watermark(self, schema: TableSchema, job: str | None) -> tuple[BinlogOffset, bool]:
        """The chunk's low watermark as the server reported it, and whether it is the previous
        chunk's high watermark (the conditions are the module doc's)."""
        carried, self._carried = self._carried, None
        if (carried is not None and not self.backfill_skip and schema.primary_key and job is not None
                and carried.job == job and carried.conn is self._conn
                and time.monotonic() - carried.at < WATERMARK_REUSE_S):
            return carried.offset, True
        return self._server_offset(), False

    def _raw_batches(self, schema: TableSchema, split: SnapshotSplit, *, safe: bool,
                     where: str | None = None) -> Iterator[pa.RecordBatch]:
        import connectorx as cx

        key = self.key_column(schema, split)
        query = build_scan_query(schema, split, key, tinyint1_as_boolean=self.tinyint1_as_boolean, safe=safe,
                                 where=where)
        # The session time zone only matters to TIMESTAMP values; skip the extra round trip otherwise.
        needs_tz = any(kind_of(c, tinyint1_as_boolean=self.tinyint1_as_boolean) == TypeKind.TIMESTAMP
                       for c in schema.columns)
        extra = {"pre_execution_query": [f"SET time_zone = '{SESSION_TIME_ZONE}'"]} if needs_tz else {}
        # A whole-table chunk (a small table's only one) is taken as connectorx's whole result
        # (``arrow``), not as its stream of ``fetch_size`` batches: every caller keeps the whole chunk
        # anyway (:meth:`_scan_raw`), and the stream's hand-over of each batch from connectorx's thread
        # cost a 2,000-row chunk ~0.3 ms more CPU and more wall here. A bounded chunk of a large table
        # keeps the stream, whose decoding overlaps the transfer: a 131,072-row chunk took less CPU
        # but more wall as a whole result (docs/performance.md).
        whole = split.start is None and split.end is None and where is None
        try:
            if whole:
                result = cx.read_sql(self.settings.connectorx_uri(tls=self.scan_tls()), query,
                                     return_type="arrow", **extra)
                batches: Iterable[pa.RecordBatch] = result.to_batches(max_chunksize=self.fetch_size)
            else:
                batches = cx.read_sql(self.settings.connectorx_uri(tls=self.scan_tls()), query,
                                      return_type="arrow_stream", batch_size=self.fetch_size, **extra)
        except RuntimeError as exc:
            failure = scan_error(self.settings, exc)
            if failure is None:
                raise
            raise failure from None
        for batch in batches:
            if batch.num_rows:
                yield batch

    def _scan_raw(self, schema: TableSchema, split: SnapshotSplit, where: str | None = None) -> list[pa.RecordBatch]:
        """Read natively; on a value the native reader cannot hold (a zero date) re-read the chunk
        with server-rendered text, and keep doing so for that table."""
        if schema.table_id not in self._safe_tables:
            try:
                return list(self._raw_batches(schema, split, safe=False, where=where))
            except BaseException as exc:  # connectorx raises pyo3's PanicException, a BaseException
                if type(exc).__name__ != "PanicException":
                    raise
                log.warning("table %s holds values the native reader rejects (%s); reading it as text",
                            schema.table_id, str(exc).splitlines()[0][:200])
                self._safe_tables.add(schema.table_id)
        try:
            return list(self._raw_batches(schema, split, safe=True, where=where))
        except BaseException as exc:
            if type(exc).__name__ == "PanicException" and "convert the value `Bytes(" in str(exc):
                raise _not_utf8(schema) from exc
            raise

    def _convert(self, raw: pa.Table | pa.RecordBatch, schema: TableSchema, *, native: bool = False) -> pa.Table:
        """``raw`` as Doris values; ``native``: DECIMAL, DATE and DATETIME columns read natively stay
        Arrow decimals, dates and wall-clock timestamps (:meth:`native_columns`) rather than text."""
        if isinstance(raw, pa.RecordBatch):
            raw = pa.Table.from_batches([raw])
        keep = self.native_columns(raw, schema) if native else {}
        if not keep:
            return arrow_to_doris(raw, schema.columns, tz=self.tz, tinyint1_as_boolean=self.tinyint1_as_boolean)
        rest = [i for i in range(len(schema.columns)) if i not in keep]
        converted = arrow_to_doris(raw.select(rest), [schema.columns[i] for i in rest], tz=self.tz,
                                   tinyint1_as_boolean=self.tinyint1_as_boolean) if rest else None
        arrays = [keep[i] if i in keep else converted.column(rest.index(i)) for i in range(len(schema.columns))]
        return pa.Table.from_arrays(arrays, names=[c.name for c in schema.columns])

    def native_columns(self, raw: pa.Table, schema: TableSchema) -> dict[int, Any]:
        """The columns of ``raw`` (by position) that a chunk loaded as Arrow can keep as read: a
        DECIMAL read as an Arrow decimal (at the column's own scale, so that its text, should the load
        go as JSON after all, is MySQL's), a DATE as date32 and a DATETIME as a timestamp without a
        zone (the wall clock). Their text (:func:`arrow_to_doris`) would only be parsed back into the
        same Arrow types by the load (``cdc_core/doris/payloads.py:conform``): for the bench's 5M rows
        ~1 CPU-s of formatting and parsing. A TIMESTAMP (shifted to the pipeline's zone) and
        everything else is converted as always."""
        out: dict[int, Any] = {}
        for i, column in enumerate(schema.columns):
            array, kind = raw.column(i), kind_of(column, tinyint1_as_boolean=self.tinyint1_as_boolean)
            if kind == TypeKind.DECIMAL and pa.types.is_decimal(array.type):
                out[i] = array.cast(pa.decimal128(38, precision_scale(column)[1]))
            elif kind == TypeKind.DATE and pa.types.is_date32(array.type):
                out[i] = array
            elif kind == TypeKind.DATETIME and pa.types.is_timestamp(array.type) and array.type.tz is None:
                out[i] = array.cast(pa.timestamp("us"))
        return out

    def as_text(self, table: pa.Table, schema: TableSchema) -> pa.Table:
        """A table read with ``native`` (:meth:`native_columns`) as the Doris values every other
        reader of a chunk takes (a binlog backfill's images are text)."""
        native = [i for i, c in enumerate(schema.columns)
                  if table.column(i).type != doris_arrow_type(c, tinyint1_as_boolean=self.tinyint1_as_boolean)]
        if not native:
            return table
        text = arrow_to_doris(table.select(native), [schema.columns[i] for i in native], tz=self.tz,
                              tinyint1_as_boolean=self.tinyint1_as_boolean)
        arrays = [text.column(native.index(i)) if i in native else table.column(i) for i in range(len(schema.columns))]
        return pa.Table.from_arrays(arrays, names=table.column_names)

    def scan_batches(self, schema: TableSchema, split: SnapshotSplit) -> Iterator[pa.Table]:
        """The chunk's rows as converted Arrow batches of ``fetch_size`` rows (no watermarks)."""
        for batch in self._scan_raw(schema, split):
            yield self._convert(batch, schema)

    def scan(self, schema: TableSchema, split: SnapshotSplit, where: str | None = None, *,
             native: bool = False) -> pa.Table:
        """The whole chunk (or the rows ``where`` selects), converted once (fewer, larger Arrow
        kernels than per batch); ``native``: see :meth:`native_columns`."""
        batches = self._scan_raw(schema, split, where)
        if not batches:
            return self.empty_table(schema)
        return self._convert(pa.Table.from_batches(batches), schema, native=native)

    def empty_table(self, schema: TableSchema) -> pa.Table:
        return pa.schema([
            pa.field(c.name, doris_arrow_type(c, tinyint1_as_boolean=self.tinyint1_as_boolean)) for c in schema.columns
        ]).empty_table()

    def read(self, split: SnapshotSplit, schema: TableSchema, *, native: bool = False,
             job: str | None = None) -> ChunkReadResult:
        """The chunk exactly as it was at its high watermark. ``native``: the chunk goes to Doris as
        Arrow, so the columns :meth:`native_columns` names stay as read (a chunk with a backfill is
        all text: the binlog's images are). ``job``: the snapshot job the chunk belongs to; its low
        watermark may be the high one of the previous chunk this reader read for the same job
        (module doc), never another job's, nor any without a job."""
        try:
            result = self._read(split, schema, native=native, job=job)
            if result is None:  # a carried low watermark of another server: read again, fresh
                result = self._read(split, schema, native=native, job=job)
        except BaseException:
            self._carried = None
            raise
        assert result is not None  # a fresh low watermark is on the high one's connection
        return result

    def _read(self, split: SnapshotSplit, schema: TableSchema, *, native: bool,
              job: str | None) -> ChunkReadResult | None:
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        low_raw, carried = self._low_watermark(schema, job)
        if self.pause_after_low_watermark is not None:
            self.pause_after_low_watermark(split)
        t1 = time.perf_counter()
        table = self.scan(schema, split, native=native)
        scanned = table.num_rows
        if self.pause_after_scan is not None:
            self.pause_after_scan(split)
        t2 = time.perf_counter()
        high_raw = low_raw if self.backfill_skip else self._server_offset()
        if carried and low_raw.server != high_raw.server:
            log.warning("the server's identity changed between two chunks (%s, then %s): chunk %s is read again "
                        "with a fresh low watermark", low_raw.server, high_raw.server, split.split_id)
            return None
        low, high = align(low_raw, self.epoch_reference), align(high_raw, self.epoch_reference)
        applied = 0
        if high > low:
            table, applied = self._backfill(split, schema, self.as_text(table, schema) if native else table, low,
                                            high)
        t3 = time.perf_counter()
        if not self.backfill_skip and job is not None:
            self._carried = _Carried(high_raw, self._conn, time.monotonic(), job)
        timings.update(low_watermark=t1 - t0, scan=t2 - t1, backfill=t3 - t2)
        return ChunkReadResult(split, table, low, high, applied, scanned, timings)

    def _backfill(self, split: SnapshotSplit, schema: TableSchema, table: pa.Table, low: BinlogOffset,
                  high: BinlogOffset) -> tuple[pa.Table, int]:
        key = self.key_column(schema, split)
        binlog = self._binlog_factory(self.settings, self.server_id, schema, self._converter)
        events = [e for e in binlog.read_range(low, high, {schema.table_id})
                  if isinstance(e, DataChangeEvent) and e.table_id == schema.table_id]
        key_range = KeyRange(split, key, conn=self._control(), collation=self._collation(schema.table_id, key),
                             tz=self.tz, tinyint1_as_boolean=self.tinyint1_as_boolean)
        key_range.prefetch(e.after.get(key.name) for e in events if e.after is not None)
        return apply_backfill(table, events, key_columns=tuple(schema.primary_key), chunk_key=key.name,
                              in_range=key_range.contains)

    def _collation(self, table_id: TableId, key: Column) -> str | None:
        if kind_of(key, tinyint1_as_boolean=self.tinyint1_as_boolean) not in (TypeKind.STRING, TypeKind.ENUM,
                                                                             TypeKind.SET):
            return None
        with self._control().cursor() as cur:
            cur.execute(
                "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                "AND COLUMN_NAME = %s", (table_id.database, table_id.table, key.name),
            )
            row = cur.fetchone()
        return str(row[0]) if row and row[0] else None
