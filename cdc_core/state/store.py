"""The state store: what a pipeline must remember across runs and crashes.

One embedded SQLite file under the pipeline's state directory by default, or any SQLAlchemy URL
(MySQL, Postgres) when several machines share a pipeline. Updates that belong together go
through one ``transaction()``; nothing is visible to other readers until it commits.

Records:

* ``kv`` — small JSON documents by (namespace, key): the pipeline fingerprint, the splitter's
  cursor, the committed binlog offset, pause flags, the schema-change state machine.
* ``chunks`` — the split plan, one row per snapshot chunk, with status, watermarks and the
  Doris transactions its load prepared (read and written as :class:`ChunkRecord`).
* ``batches`` — binlog micro-batches: range, status, prepared transactions
  (:class:`BatchRecord`).
* ``schema_history`` — each captured table's schema by binlog offset.

The schema is versioned in ``meta``; ``MIGRATIONS`` take an older file forward.

Writers are serialised per store, across processes and machines (``cdc_core/state/locking.py``):
SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's ``pg_advisory_xact_lock`` as a write transaction's first
statement, MySQL's ``GET_LOCK`` — the lock each backend has natively, taken before the first read
of a read-modify-write, so no update is lost and no caller has to retry. Table creation and
migrations run in the same way under a lock of their own, so the first runs of two machines do
not both create the tables. Single-row writes are upserts (``INSERT … ON CONFLICT DO UPDATE`` /
``ON DUPLICATE KEY UPDATE``) all the same: correct even for a writer that holds no lock.

A URL is SQLAlchemy's; a plain ``postgresql://`` means psycopg2 (the driver dagster-postgres
uses too, see ``pyproject.toml``) and a plain ``mysql://`` means PyMySQL (:func:`engine_url`).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine

from cdc_core.state.locking import write_transaction
from cdc_core.state.records import BatchRecord, BatchStatus, ChunkRecord, ChunkStatus

logger = logging.getLogger(__name__)

# How long a SQLite store waits for another process's write lock (its busy timeout, and the WAL switch).
SQLITE_LOCK_TIMEOUT_S = 60.0

SCHEMA_VERSION = 1
IN_LIST = 500  # keys in one IN (...) of a read or delete of many (SQLite allows 32,766 bound values)

metadata = sa.MetaData()

meta_table = sa.Table(
    "meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

kv_table = sa.Table(
    "kv",
    metadata,
    sa.Column("namespace", sa.String(64), primary_key=True),
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

chunks_table = sa.Table(
    "chunks",
    metadata,
    sa.Column("table_id", sa.String(255), primary_key=True),
    sa.Column("chunk_index", sa.Integer, primary_key=True),
    sa.Column("start", sa.Text, nullable=True),  # JSON list or null (unbounded)
    sa.Column("end", sa.Text, nullable=True),
    sa.Column("status", sa.String(16), nullable=False, default="PENDING"),
    sa.Column("generation", sa.Integer, nullable=False, default=0),
    sa.Column("low_watermark", sa.Text, nullable=True),
    sa.Column("high_watermark", sa.Text, nullable=True),
    sa.Column("transactions", sa.Text, nullable=True),  # JSON list of prepared Doris txns
    sa.Column("rows", sa.BigInteger, nullable=True),
    sa.Column("detail", sa.Text, nullable=True),  # JSON: duration, rows/s, ...
)

batches_table = sa.Table(
    "batches",
    metadata,
    sa.Column("batch_id", sa.String(128), primary_key=True),
    sa.Column("start_offset", sa.Text, nullable=False),
    sa.Column("end_offset", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("transactions", sa.Text, nullable=True),
    sa.Column("detail", sa.Text, nullable=True),
)

schema_history_table = sa.Table(
    "schema_history",
    metadata,
    sa.Column("table_id", sa.String(255), primary_key=True),
    sa.Column("sequence", sa.BigInteger, primary_key=True),  # BinlogOffset.sequence
    sa.Column("offset", sa.Text, nullable=False),
    sa.Column("schema", sa.Text, nullable=False),
)

# version → statements that take a store at version-1 to version
MIGRATIONS: dict[int, list[str]] = {}


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class StateTransaction:
    """One open transaction on the store; every method runs inside it."""

    def __init__(self, conn: Connection):
        self.conn = conn

    # -- kv ---------------------------------------------------------------------------------

    def get(self, namespace: str, key: str, default: Any = None) -> Any:
        row = self.conn.execute(
            sa.select(kv_table.c.value).where(kv_table.c.namespace == namespace, kv_table.c.key == key)
        ).first()
        return default if row is None else _loads(row[0])

    def put(self, namespace: str, key: str, value: Any) -> None:
        _upsert(self.conn, kv_table, {"namespace": namespace, "key": key}, {"value": _dumps(value)})

    def put_many(self, namespace: str, items: Iterable[tuple[str, Any]]) -> None:
        """:meth:`put` of many keys, ``(key, value)`` each, in order (a key given twice keeps its last
        value): one upsert run as an executemany instead of a statement built and run per key (a
        run of 300 tables takes, renews and stores hundreds of per-table keys at once)."""
        rows = [{"namespace": namespace, "key": key, "value": _dumps(value)} for key, value in items]
        if rows:
            _upsert_many(self.conn, kv_table, ("namespace", "key"), ("value",), rows)

    def delete(self, namespace: str, key: str) -> None:
        self.conn.execute(kv_table.delete().where(kv_table.c.namespace == namespace, kv_table.c.key == key))

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, Any]:
        """The values of those of ``keys`` that are written, by key: a statement per ``IN_LIST`` keys,
        not one per key (hundreds of chunks' entries)."""
        found: dict[str, Any] = {}
        for i in range(0, len(keys), IN_LIST):
            rows = self.conn.execute(sa.select(kv_table.c.key, kv_table.c.value).where(
                kv_table.c.namespace == namespace, kv_table.c.key.in_(list(keys[i: i + IN_LIST]))))
            found.update((k, _loads(v)) for k, v in rows)
        return found

    def delete_many(self, namespace: str, keys: Sequence[str]) -> None:
        """Delete ``keys`` (those written), a statement per ``IN_LIST`` of them."""
        for i in range(0, len(keys), IN_LIST):
            self.conn.execute(kv_table.delete().where(kv_table.c.namespace == namespace,
                                                      kv_table.c.key.in_(list(keys[i: i + IN_LIST]))))

    def items(self, namespace: str) -> list[tuple[str, Any]]:
        rows = self.conn.execute(
            sa.select(kv_table.c.key, kv_table.c.value).where(kv_table.c.namespace == namespace).order_by(kv_table.c.key)
        )
        return [(k, _loads(v)) for k, v in rows]

    # -- chunks -----------------------------------------------------------------------------

    def add_chunks(self, chunks: Iterable[ChunkRecord]) -> None:
        """Insert planned chunks (``ChunkRecord.planned``) as PENDING, generation 0."""
        rows = [
            {
                "table_id": c.table_id,
                "chunk_index": c.chunk_index,
                "start": _dumps(c.start),
                "end": _dumps(c.end),
                "status": ChunkStatus.PENDING.value,
                "generation": 0,
            }
            for c in chunks
        ]
        if rows:
            self.conn.execute(chunks_table.insert(), rows)

    def delete_chunks(self, table_id: str) -> int:
        """Forget every chunk of ``table_id`` (a table of that name that no longer exists); the count."""
        return self.conn.execute(chunks_table.delete().where(chunks_table.c.table_id == table_id)).rowcount

    def update_chunk(self, table_id: str, chunk_index: int, **fields: Any) -> None:
        """Set some fields of one chunk (``status`` a :class:`ChunkStatus`); a missing chunk is a KeyError."""
        if "status" in fields:
            fields["status"] = ChunkStatus(fields["status"]).value
        values = {k: (_dumps(v) if k in _JSON_CHUNK_FIELDS else v) for k, v in fields.items()}
        count = self.conn.execute(
            chunks_table.update()
            .where(chunks_table.c.table_id == table_id, chunks_table.c.chunk_index == chunk_index)
            .values(**values)
        ).rowcount
        if count != 1:
            raise KeyError(f"no chunk {table_id}#{chunk_index} in the state store")

    def update_chunks(self, updates: Iterable[tuple[str, int, dict[str, Any]]]) -> None:
        """:meth:`update_chunk` of many chunks, ``(table_id, chunk_index, fields)`` each: one executemany
        per set of field names instead of a statement built and run per chunk (a snapshot run of 300
        one-chunk tables writes each chunk three times). A missing chunk is a KeyError, as there."""
        by_fields: dict[tuple[str, ...], list[tuple[str, int, dict[str, Any]]]] = {}
        for update in updates:
            by_fields.setdefault(tuple(sorted(update[2])), []).append(update)
        for names, group in by_fields.items():
            if len(group) == 1 or not names:
                for table_id, chunk_index, fields in group:
                    self.update_chunk(table_id, chunk_index, **fields)
                continue
            rows = []
            for table_id, chunk_index, fields in group:
                row = {f"v_{k}": (_dumps(v) if k in _JSON_CHUNK_FIELDS else v) for k, v in fields.items()}
                if "status" in fields:
                    row["v_status"] = ChunkStatus(fields["status"]).value
                rows.append({**row, "b_table_id": table_id, "b_chunk_index": chunk_index})
            statement = (chunks_table.update()
                         .where(chunks_table.c.table_id == sa.bindparam("b_table_id"),
                                chunks_table.c.chunk_index == sa.bindparam("b_chunk_index"))
                         .values(**{n: sa.bindparam(f"v_{n}") for n in names}))
            if self.conn.execute(statement, rows).rowcount != len(rows):
                self._missing_chunks([(table_id, chunk_index) for table_id, chunk_index, _ in group])

    def _missing_chunks(self, keys: list[tuple[str, int]]) -> None:
        """The KeyError of :meth:`update_chunk` for the first of ``keys`` the store does not hold (a
        driver whose executemany does not count the rows it changed: nothing missing, nothing raised)."""
        held = {(r.table_id, r.chunk_index) for r in self.chunks()}
        for table_id, chunk_index in keys:
            if (table_id, chunk_index) not in held:
                raise KeyError(f"no chunk {table_id}#{chunk_index} in the state store")

    def chunks(self, table_id: str | None = None, status: ChunkStatus | None = None) -> list[ChunkRecord]:
        query = sa.select(chunks_table).order_by(chunks_table.c.table_id, chunks_table.c.chunk_index)
        if table_id is not None:
            query = query.where(chunks_table.c.table_id == table_id)
        if status is not None:
            query = query.where(chunks_table.c.status == ChunkStatus(status).value)
        return self._chunk_records(self.conn.execute(query))

    def chunks_of(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], ChunkRecord]:
        """The records of these ``(table_id, chunk_index)`` keys that exist, by key: read by their
        keys, not by reading the whole plan. A run goes in groups (``txn_groups``) and reads its
        group's records a few times each: with the whole plan read each time, a database of
        thousands of one-chunk tables (or a table of thousands of chunks) cost each group a read
        of every record, a run's reads growing with the square of its chunks.

        Each statement asks for at most ``IN_LIST`` tables and ``IN_LIST`` chunk indexes (plain
        ``IN`` lists, the same SQL on SQLite, PostgreSQL and MySQL); the rows matching a table of
        one and an index of another are dropped here."""
        wanted = set(keys)
        by_table: dict[str, set[int]] = {}
        for table_id, index in wanted:
            by_table.setdefault(table_id, set()).add(index)
        batches: list[tuple[list[str], set[int]]] = []  # (tables, chunk indexes) of each statement
        for table_id in sorted(by_table):
            indexes = sorted(by_table[table_id])
            for i in range(0, len(indexes), IN_LIST):  # a table of many chunks: IN_LIST indexes a statement
                part = set(indexes[i:i + IN_LIST])
                if batches and len(batches[-1][0]) < IN_LIST and len(batches[-1][1] | part) <= IN_LIST:
                    batches[-1][0].append(table_id)
                    batches[-1][1].update(part)
                else:
                    batches.append(([table_id], part))
        found: dict[tuple[str, int], ChunkRecord] = {}
        for tables, indexes in batches:
            query = sa.select(chunks_table).where(chunks_table.c.table_id.in_(tables),
                                                  chunks_table.c.chunk_index.in_(sorted(indexes)))
            for record in self._chunk_records(self.conn.execute(query)):
                if record.key in wanted:
                    found[record.key] = record
        return found

    def _chunk_records(self, result: Any) -> list[ChunkRecord]:
        columns = list(result.keys())
        rows = result.all()
        if not rows:
            return []
        # every JSON field of every row in one json.loads (each is a whole JSON text written by
        # _dumps, or NULL): a run of 300 tables reads its 300 chunks dozens of times, and 1,800
        # json.loads calls were most of each read
        at = [columns.index(name) for name in _JSON_CHUNK_FIELDS]
        decoded = json.loads("[" + ",".join("[" + ",".join("null" if row[i] is None else row[i] for i in at) + "]"
                                            for row in rows) + "]")
        out = []
        for row, values in zip(rows, decoded, strict=True):
            record = dict(zip(columns, row, strict=True))
            record.update(zip(_JSON_CHUNK_FIELDS, values, strict=True))
            out.append(ChunkRecord.from_dict(record))
        return out

    # -- batches ----------------------------------------------------------------------------

    def put_batch(self, record: BatchRecord) -> None:
        """Insert or replace one batch record."""
        values = {
            "start_offset": _dumps(record.start_offset),
            "end_offset": _dumps(record.end_offset),
            "status": BatchStatus(record.status).value,
            "transactions": _dumps(record.transactions),
            "detail": _dumps(record.detail),
        }
        _upsert(self.conn, batches_table, {"batch_id": record.batch_id}, values)

    def batch(self, batch_id: str) -> BatchRecord | None:
        row = self.conn.execute(sa.select(batches_table).where(batches_table.c.batch_id == batch_id)).mappings().first()
        return None if row is None else _batch_record(row)

    def batches(self, status: BatchStatus | None = None) -> list[BatchRecord]:
        query = sa.select(batches_table).order_by(batches_table.c.batch_id)
        if status is not None:
            query = query.where(batches_table.c.status == BatchStatus(status).value)
        return [_batch_record(row) for row in self.conn.execute(query).mappings()]

    # -- schema history ---------------------------------------------------------------------

    def put_schema(self, table_id: str, sequence: int, offset: Any, schema: Any) -> None:
        self.put_schemas([(table_id, sequence, offset, schema)])

    def put_schemas(self, entries: Iterable[tuple[str, int, Any, Any]]) -> None:
        """:meth:`put_schema` of many tables, ``(table_id, sequence, offset, schema)`` each: one
        executemany per statement (the first planning round of 300 tables was 600 statements)."""
        rows = [{"table_id": table_id, "sequence": sequence, "offset": _dumps(offset), "schema": _dumps(schema)}
                for table_id, sequence, offset, schema in entries]
        if not rows:
            return
        h = schema_history_table
        self.conn.execute(h.delete().where(h.c.table_id == sa.bindparam("table_id"),
                                           h.c.sequence == sa.bindparam("sequence")), rows)
        self.conn.execute(h.insert(), rows)

    def schema_at(self, table_id: str, sequence: int) -> Any:
        """The schema valid at ``sequence``: the last one recorded at or before it."""
        row = self.conn.execute(
            sa.select(schema_history_table.c.schema)
            .where(schema_history_table.c.table_id == table_id, schema_history_table.c.sequence <= sequence)
            .order_by(schema_history_table.c.sequence.desc())
            .limit(1)
        ).first()
        return None if row is None else _loads(row[0])

    def schemas_at(self, sequence: int | None) -> dict[str, Any]:
        """Every table's ``schema_at(sequence)`` (None: its latest) in one query rather than one per
        table (a binlog batch over 300 tables asked 600 times); a table with no schema recorded by
        then is absent, one recorded dropped maps to None."""
        h = schema_history_table
        last = sa.select(h.c.table_id, sa.func.max(h.c.sequence).label("sequence"))
        if sequence is not None:
            last = last.where(h.c.sequence <= sequence)
        last = last.group_by(h.c.table_id).subquery()
        rows = self.conn.execute(
            sa.select(h.c.table_id, h.c.schema)
            .join(last, sa.and_(h.c.table_id == last.c.table_id, h.c.sequence == last.c.sequence))
        )
        return {table_id: _loads(schema) for table_id, schema in rows}

    def latest_schemas(self) -> dict[str, Any]:
        """Each table's last recorded schema (``schema_at`` of the latest sequence, None for a table
        recorded dropped), in one query rather than one per table."""
        return self.schemas_at(None)

    def schema_tables(self) -> list[str]:
        rows = self.conn.execute(sa.select(schema_history_table.c.table_id).distinct())
        return sorted(r[0] for r in rows)


_JSON_CHUNK_FIELDS = ("start", "end", "low_watermark", "high_watermark", "transactions", "detail")


def _upsert(conn: Connection, table: sa.Table, keys: dict[str, Any], values: dict[str, Any]) -> None:
    """Insert the row, or update ``values`` of the row with these ``keys``: one statement."""
    dialect = conn.dialect.name
    if dialect in ("postgresql", "sqlite"):
        insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
        statement = insert(table).values(**keys, **values)
        conn.execute(statement.on_conflict_do_update(index_elements=list(keys), set_=values))
    elif dialect == "mysql":
        statement = mysql_insert(table).values(**keys, **values)
        conn.execute(statement.on_duplicate_key_update(**values))
    else:  # another backend: the write lock makes update-then-insert safe
        if not conn.execute(table.update().where(*(table.c[k] == v for k, v in keys.items())).values(**values)).rowcount:
            conn.execute(table.insert().values(**keys, **values))


def _upsert_many(conn: Connection, table: sa.Table, keys: Sequence[str], values: Sequence[str],
                 rows: list[dict[str, Any]]) -> None:
    """:func:`_upsert` of many rows (each with ``keys`` and ``values``), applied in order: one
    statement run as an executemany where the backend has an upsert, else row by row."""
    dialect = conn.dialect.name
    if dialect in ("postgresql", "sqlite"):
        statement = (postgresql_insert if dialect == "postgresql" else sqlite_insert)(table)
        conn.execute(statement.on_conflict_do_update(index_elements=list(keys),
                                                     set_={v: statement.excluded[v] for v in values}), rows)
    elif dialect == "mysql":
        statement = mysql_insert(table)
        conn.execute(statement.on_duplicate_key_update(**{v: statement.inserted[v] for v in values}), rows)
    else:
        for row in rows:
            _upsert(conn, table, {k: row[k] for k in keys}, {v: row[v] for v in values})


def engine_url(url: str) -> sa.URL:
    """The URL SQLAlchemy opens: a plain ``mysql://`` names PyMySQL (the driver Tidemark installs;
    SQLAlchemy's default, mysqlclient, is not), everything else as given."""
    parsed = sa.make_url(url)
    if parsed.drivername in ("mysql", "mariadb"):
        parsed = parsed.set(drivername=f"{parsed.drivername}+pymysql")
    return parsed


def _batch_record(row: Any) -> BatchRecord:
    record = dict(row)
    for name in ("start_offset", "end_offset", "transactions", "detail"):
        record[name] = _loads(record[name])
    return BatchRecord.from_dict(record)


SQLITE_FILE = "state.sqlite"
"""The file of a state directory's store."""


def _enter_wal(cur: Any, timeout_s: float = SQLITE_LOCK_TIMEOUT_S) -> None:
    """``PRAGMA journal_mode=WAL`` on a new connection, asked again while the file is locked.

    The switch to WAL happens once, on a new file, and the processes that open that new file at
    once race for it: the switch reads the file and then writes its header, and SQLite answers
    "database is locked" at once, without waiting out the busy timeout, to a connection that holds
    its read while another holds the write lock (it would otherwise deadlock). The loser asks
    again; the winner's switch is short, and once the file is in WAL the pragma changes nothing.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class StateStore:
    """A pipeline's durable memory. Open with a state directory or a SQLAlchemy URL."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._migrate()

    @classmethod
    def open(cls, state_dir: Path | str | None = None, url: str | None = None) -> StateStore:
        if url:
            parsed = engine_url(url)
            if parsed.get_backend_name() != "sqlite":
                return cls(sa.create_engine(parsed, pool_pre_ping=True))
            engine = sa.create_engine(parsed, connect_args={"timeout": SQLITE_LOCK_TIMEOUT_S})
        else:
            if state_dir is None:
                raise ValueError("a state directory or a SQLAlchemy URL is required")
            path = Path(state_dir)
            path.mkdir(parents=True, exist_ok=True)
            engine = sa.create_engine(f"sqlite:///{path / SQLITE_FILE}", connect_args={"timeout": SQLITE_LOCK_TIMEOUT_S})
        # A SQLite file, named by a state directory or by a ``sqlite:///`` URL alike: its writers
        # serialise on the file's write lock, taken by BEGIN IMMEDIATE before the first read.

        @sa.event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # noqa: ANN001 - SQLAlchemy hook signature
            # WAL lets the Dagster webserver read while a run writes; BEGIN IMMEDIATE (below)
            # takes the write lock up front, so two writers queue instead of deadlocking.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            _enter_wal(cur)
            cur.execute("PRAGMA synchronous=FULL")
            cur.close()

        @sa.event.listens_for(engine, "begin")
        def _sqlite_begin(conn):  # noqa: ANN001 - SQLAlchemy hook signature
            readonly = conn.get_execution_options().get("tidemark_readonly", False)
            conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")

        return cls(engine)

    @classmethod
    def in_memory(cls) -> StateStore:
        """A store that lives only in this process (one SQLite database in memory, shared by every
        connection of the engine) and vanishes on ``close``: for computing what a step would record
        without recording it (``tidemark splits`` on a pipeline that has no plan yet)."""
        return cls(sa.create_engine("sqlite://", poolclass=sa.pool.StaticPool))

    @staticmethod
    def location(definition: Any, url: str | None = None,
                 state_dir: Path | str | None = None) -> tuple[str | None, Path | None]:
        """Where a pipeline's state lives, one of the two set: ``url``, else ``state_dir`` (a
        deployment's overrides), else the file's ``tidemark.state.url``, else its state directory."""
        if url:
            return url, None
        if state_dir:
            return None, Path(state_dir)
        file_url = definition.pipeline.state_url
        if file_url:
            return file_url.get_secret_value(), None
        return None, Path(definition.state_dir)

    @classmethod
    def for_pipeline(cls, definition: Any, url: str | None = None, state_dir: Path | str | None = None) -> StateStore:
        """The pipeline's store (:meth:`location`), created when it does not exist yet."""
        where_url, where_dir = cls.location(definition, url, state_dir)
        return cls.open(where_dir, where_url)

    @classmethod
    def open_existing(cls, definition: Any, url: str | None = None,
                      state_dir: Path | str | None = None) -> StateStore | None:
        """The pipeline's store if it exists; None for a state directory without its file (a
        pipeline that never ran: nothing is created for it). A URL's store is opened as it is."""
        where_url, where_dir = cls.location(definition, url, state_dir)
        if where_url is None and not (where_dir / SQLITE_FILE).is_file():  # type: ignore[operator]
            return None
        return cls.open(where_dir, where_url)

    def _migrate(self) -> None:
        """Create the tables and take an older schema forward: once, under the migration lock
        (PostgreSQL's DDL is transactional, so a second process finds the tables made)."""
        with self.engine.connect() as connection, write_transaction(connection, "migrate") as conn:
            metadata.create_all(conn)
            row = conn.execute(sa.select(meta_table.c.value).where(meta_table.c.key == "schema_version")).first()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"The state store was written by a newer Tidemark (schema {version} > {SCHEMA_VERSION}); "
                    "upgrade Tidemark to use it"
                )
            if row is not None and version < SCHEMA_VERSION:
                logger.info("state store: schema %d migrated to %d", version, SCHEMA_VERSION)
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS.get(target, []):
                    conn.exec_driver_sql(statement)
            if row is None:
                conn.execute(meta_table.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
            elif version != SCHEMA_VERSION:
                conn.execute(
                    meta_table.update().where(meta_table.c.key == "schema_version").values(value=str(SCHEMA_VERSION))
                )

    @property
    def schema_version(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(meta_table.c.value).where(meta_table.c.key == "schema_version")).scalar_one())

    @contextmanager
    def transaction(self, readonly: bool = False) -> Iterator[StateTransaction]:
        """One atomic unit. Writers serialize (the store's write lock, taken before the first
        statement); ``readonly`` readers never wait for them (WAL, MVCC) and must not write."""
        with self.engine.connect() as conn:
            if readonly:
                conn = conn.execution_options(tidemark_readonly=True)
                with conn.begin():
                    yield StateTransaction(conn)
                return
            with write_transaction(conn):
                yield StateTransaction(conn)

    # Single-statement conveniences.
    def get(self, namespace: str, key: str, default: Any = None) -> Any:
        with self.transaction(readonly=True) as tx:
            return tx.get(namespace, key, default)

    def put(self, namespace: str, key: str, value: Any) -> None:
        with self.transaction() as tx:
            tx.put(namespace, key, value)

    def close(self) -> None:
        self.engine.dispose()
