"""DDL semantics: validate a parsed statement the way Doris' FE does, then apply it to storage.

Messages follow Doris' ``ErrorCode`` texts where they are known (``Unknown database 'x'``,
``Table 't' already exists``, ``Can't create database 'd'; database exists`` ...).
"""

from __future__ import annotations

import copy
import threading
import weakref
from dataclasses import dataclass, field

import duckdb

from .catalog import HIDDEN_COLUMNS, KEYS_TYPES, Column, Table
from .sql import (
    AlterTable,
    CreateDatabase,
    CreateTable,
    DropDatabase,
    DropTable,
    TruncateTable,
)
from .sql_lexer import SqlError
from .storage import Storage, data_ref, quote_default
from .types import INTEGER_TYPES, DorisType, quote_ident

_SEQ_TYPES = INTEGER_TYPES | {"DATEV2", "DATETIMEV2"}


# Doris's FeNameFormat with enable_unicode_name_support on: \p{L} (a letter in any script) is
# str.isalpha() here; table_name_length_limit at its default.
TABLE_NAME_LIMIT = 64
_TABLE_REGEX = "^[a-zA-Z\\p{L}][a-zA-Z0-9\\-_\\p{L}]*$"
_COLUMN_REGEX = "^[.a-zA-Z0-9_+\\-/?@#$%^&*\"\\s,:\\p{L}]{1,256}$"
_TABLE_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_COLUMN_CHARS = _TABLE_CHARS | set('.+/?@#$%^&*",:')


def _check_table_name(name: str, what: str = "table") -> None:
    ok = bool(name) and name[0].isalpha() and all(c in _TABLE_CHARS or c.isalpha() for c in name)
    if what == "database":
        if not ok or len(name) > 64:
            raise SqlError(f"Incorrect database name '{name}'")
        return
    if not ok:
        raise SqlError(f"Incorrect table name '{name}'. Table name regex is '{_TABLE_REGEX}'")
    if len(name) > TABLE_NAME_LIMIT:
        raise SqlError(f"Incorrect table name '{name}'. Table name length exceeds limit, the length of table name "
                       f"'{name}' is {len(name)} which is greater than the configuration 'table_name_length_limit' "
                       f"({TABLE_NAME_LIMIT}).")


def _check_column_name(name: str) -> None:
    if not (1 <= len(name) <= 256 and all(c in _COLUMN_CHARS or c.isalpha() or c.isspace() for c in name)):
        raise SqlError(f"Incorrect column name '{name}'. Column regex is '{_COLUMN_REGEX}'")


def _db_name(db: str | None, current: str) -> str:
    name = db or current
    if not name:
        raise SqlError("No database selected")
    return name


def _require_table(st: Storage, db: str, name: str) -> Table:
    if not st.db_exists(db):
        raise SqlError(f"Unknown database '{db}'")
    t = st.table(db, name)
    if t is None:
        raise SqlError(f"Unknown table '{name}'")
    return t


def create_database(st: Storage, s: CreateDatabase) -> None:
    with st.transaction() as cur:
        _check_table_name(s.name, "database")
        if st.db_exists(s.name):
            if s.if_not_exists:
                return
            raise SqlError(f"Can't create database '{s.name}'; database exists")
        st.create_database(cur, s.name)
        st.after_ddl(cur, only_created=True)


def drop_database(st: Storage, s: DropDatabase) -> None:
    with st.transaction() as cur:
        if not st.db_exists(s.name):
            if s.if_exists:
                return
            raise SqlError(f"Can't drop database '{s.name}'; database doesn't exist")
        st.drop_database(cur, s.name)
        st.after_ddl(cur)


_WITHOUT_KEYS = "enable_duplicate_without_keys_by_default"
# Properties whose value Doris parses as a boolean, refusing anything but true/false.
_BOOLEAN_PROPERTIES = ("light_schema_change", "enable_unique_key_merge_on_write", _WITHOUT_KEYS,
                       "store_row_column", "disable_auto_compaction", "is_being_synced")
# Doris's short key: at most 3 columns and 36 bytes (FeConstants.shortkey_max_column_count / _maxsize_bytes)
_SHORT_KEY_COLUMNS = 3
_SHORT_KEY_BYTES = 36
_INDEX_BYTES = {"BOOLEAN": 1, "TINYINT": 1, "SMALLINT": 2, "INT": 4, "BIGINT": 8, "LARGEINT": 16, "DATEV2": 4,
                "DATETIMEV2": 8, "VARCHAR": 20}
# Types Doris cannot sort (key) a table by: no short key of them either.
_NOT_KEYABLE = ("FLOAT", "DOUBLE", "STRING", "JSONB")


def _check_boolean_properties(props: dict[str, str]) -> None:
    for name in _BOOLEAN_PROPERTIES:
        value = props.get(name)
        if value is not None and value.lower() not in ("true", "false"):
            raise SqlError(f"Invalid {name} value: {value}. It must be true or false")


def _index_bytes(dtype: DorisType) -> int:
    if dtype.name == "CHAR":
        return dtype.length or 1
    if dtype.name == "DECIMALV3":
        p = dtype.precision or 9
        return 4 if p <= 9 else 8 if p <= 18 else 16
    return _INDEX_BYTES.get(dtype.name, 8)


def _default_duplicate_keys(columns: list[Column]) -> list[str]:
    """The keys Doris picks for a DUPLICATE table created without a KEY clause (and without
    ``enable_duplicate_without_keys_by_default``): the leading columns that fit Doris's short key,
    stopping at a type that cannot be a key and after the first VARCHAR."""
    keys: list[str] = []
    size = 0
    for c in columns:
        dtype = c.dtype
        size += _index_bytes(dtype)
        if len(keys) >= _SHORT_KEY_COLUMNS or size > _SHORT_KEY_BYTES:
            if not keys and dtype.name in ("CHAR", "VARCHAR"):
                keys.append(c.name)
            break
        if dtype.name in _NOT_KEYABLE:
            break
        keys.append(c.name)
        if dtype.name == "VARCHAR":
            break
    if not keys:
        raise SqlError("The olap table first column could not be float, double, string or array, struct, map, "
                       "please use decimal or varchar instead.")
    return keys


def _check_key_type(c: Column) -> None:
    """Doris's rules for a key column's type (ColumnDef.analyze)."""
    name = c.dtype.name
    if name in ("FLOAT", "DOUBLE"):
        raise SqlError("Float or double can not used as a key, use decimal instead.")
    if name == "STRING":
        raise SqlError(f"String Type should not be used in key column[{c.name}].")
    if name == "JSONB":
        raise SqlError(f"JSONB type should not be used in key column[{c.name}].")


def _build_table(db: str, s: CreateTable) -> Table:
    if not s.columns:
        raise SqlError("Table should have at least one column")
    seen: set[str] = set()
    for c in s.columns:
        if c.name.lower() in seen:
            raise SqlError(f"Duplicate column name '{c.name}'")
        if c.name.upper() in HIDDEN_COLUMNS:
            raise SqlError(f"Incorrect column name '{c.name}'")
        seen.add(c.name.lower())
    kind = s.keys_kind or "DUPLICATE"
    if kind == "AGGREGATE":
        raise SqlError("AGGREGATE KEY tables are not supported by the Doris stand-in")
    props = {k.lower() if not k.startswith("function_column") else k: v for k, v in s.properties.items()}
    _check_boolean_properties(props)
    if s.random_distribution and kind == "UNIQUE":
        raise SqlError("Create unique keys table should not contain random distribution desc")
    keys = s.key_names
    if not keys:
        if kind == "UNIQUE":
            raise SqlError("Unique key table must specify key columns")
        keys = [] if props.get(_WITHOUT_KEYS, "false").lower() == "true" else _default_duplicate_keys(s.columns)
    by_name = {c.name.lower(): c for c in s.columns}
    for i, k in enumerate(keys):
        if k.lower() not in by_name:
            raise SqlError(f"Key column[{k}] doesn't exist.")
        if s.columns[i].name.lower() != k.lower():
            raise SqlError("Key columns should be a ordered prefix of the schema. "
                           f"KeyColumns[{i}] (starts from zero) is {k}, but corresponding column is "
                           f"{s.columns[i].name} in the previous columns declaration.")
    for c in s.columns:
        c.is_key = c.name.lower() in {k.lower() for k in keys}
        if c.is_key:
            _check_key_type(c)
    for d in s.distribution:
        if d.lower() not in by_name:
            raise SqlError(f"Distribution column[{d}] is not found")
        if kind == "UNIQUE" and d.lower() not in {k.lower() for k in keys}:
            raise SqlError(f"Distribution column[{d}] is not key column")
        dtype = by_name[d.lower()].dtype.name
        if dtype in ("FLOAT", "DOUBLE"):
            raise SqlError("Floating point type column can not be distribution column")
        if dtype in ("STRING", "JSONB"):
            raise SqlError(f"{'String' if dtype == 'STRING' else 'JSONB'} Type should not be used in distribution "
                           f"column[{by_name[d.lower()].name}].")
    partition = _check_partition(s, by_name, kind, props)
    rep = props.get("replication_num")
    if rep is not None and (not rep.isdigit() or int(rep) > 1):
        raise SqlError(
            "Failed to find enough backend, please check the replication num,replication tag and storage medium "
            "and avail capacity of backends or maybe all be on decommission state. Create failed replications:"
            f"{rep}, need: {rep}, got: 1")
    alloc = props.get("replication_allocation")
    if alloc and not alloc.replace(" ", "").endswith(":1"):
        raise SqlError(f"Failed to find enough backend, please check the replication num: {alloc}")
    seq_col = props.get("function_column.sequence_col")
    seq_type = props.get("function_column.sequence_type")
    if (seq_col or seq_type) and kind != "UNIQUE":
        raise SqlError("sequence column only support UNIQUE_KEYS")
    if seq_col and seq_type:
        raise SqlError("sequence_col and sequence_type cannot be set at the same time")
    if seq_col:
        c = by_name.get(seq_col.lower())
        if c is None:
            raise SqlError(f"The specified sequence column[{seq_col}] not exists")
        if c.dtype.name not in _SEQ_TYPES:
            raise SqlError("Sequence type only support integer types and date types")
        props["function_column.sequence_col"] = c.name
    if seq_type:
        try:
            dt = DorisType.parse(seq_type)
        except ValueError as e:
            raise SqlError(str(e)) from e
        if dt.name not in _SEQ_TYPES:
            raise SqlError("Sequence type only support integer types and date types")
        props["function_column.sequence_type"] = seq_type.upper()
    props.setdefault("light_schema_change", "true")
    if kind == "UNIQUE":
        props.setdefault("enable_unique_key_merge_on_write", "true")
    for uid, c in enumerate(s.columns):
        c.uid = uid
    ordered_keys = [by_name[k.lower()].name for k in keys]
    return Table(
        db=db, name=s.name, keys_type=KEYS_TYPES[kind], columns=s.columns, key_names=ordered_keys,
        distribution=[by_name[d.lower()].name for d in s.distribution], buckets=s.buckets,
        random_distribution=s.random_distribution,
        properties=props, comment=s.comment, next_uid=len(s.columns), partition=partition,
    )


# Doris's "Data Partitioning" page: what a LIST partition column may be
_LIST_PARTITION_TYPES = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT", "DATEV2", "DATETIMEV2", "CHAR",
                         "VARCHAR")
_DATE_TRUNC_UNITS = ("second", "minute", "hour", "day", "week", "month", "quarter", "year")


def _check_partition(s: CreateTable, by_name: dict[str, Column], kind: str, props: dict[str, str]) -> dict:
    """The partition clause checked as Doris's FE checks it (PartitionTableInfo); the columns named
    as the table names them. Partitions themselves are not kept: rows are not routed to them."""
    part = dict(s.partition)
    if not part:
        return part
    if part["function"] is not None:
        if not part["auto"]:
            raise SqlError("Non-auto partition table not support partition expr!")
        if part["kind"] == "LIST":
            raise SqlError("internal catalog does not support functions in 'LIST' partition")
        if part["function"] != "date_trunc":
            raise SqlError(f"auto create partition only support date_trunc function of RANGE partition, "
                           f"got {part['function']}")
        if part["unit"] not in _DATE_TRUNC_UNITS:
            raise SqlError(f"date_trunc function time unit param only support argument is "
                           f"{'|'.join(_DATE_TRUNC_UNITS)}, got {part['unit']!r}")
    elif part["auto"] and part["kind"] == "RANGE":
        raise SqlError("AUTO RANGE PARTITION needs a partition function: date_trunc(column, 'unit')")
    merge_on_write = kind == "UNIQUE" and props.get("enable_unique_key_merge_on_write", "true").lower() == "true"
    names = []
    for name in part["columns"]:
        c = by_name.get(name.lower())
        if c is None:
            raise SqlError(f"partition key {name} is not exists")
        if name.lower() in (n.lower() for n in names):
            raise SqlError(f"Duplicated partition column {name}")
        if not c.is_key and merge_on_write:
            raise SqlError("Merge-on-Write table's partition column must be KEY column")
        if c.dtype.name in ("FLOAT", "DOUBLE"):
            raise SqlError("Floating point type column can not be partition column")
        if c.dtype.name == "STRING":
            raise SqlError(f"String Type should not be used in partition column[{c.name}].")
        if part["kind"] == "LIST" and c.dtype.name not in _LIST_PARTITION_TYPES:
            raise SqlError(f"Column[{c.name}] type[{c.dtype.name}] cannot be a list partition key.")
        if part["auto"] and part["kind"] == "RANGE":
            if c.nullable:
                raise SqlError("AUTO RANGE PARTITION doesn't support NULL column")
            if c.dtype.name not in ("DATE", "DATEV2", "DATETIME", "DATETIMEV2"):
                raise SqlError(f"partition expr date_trunc is illegal: {c.name} is {c.dtype.name}, not DATE or DATETIME")
        names.append(c.name)
    part["columns"] = names
    return part


def _default_key(default: str | None) -> str | None:
    """A default as Doris compares two (``isSameDefaultValue``): CURRENT_TIMESTAMP is now() in any case."""
    return "CURRENT_TIMESTAMP" if default is not None and default.upper() == "CURRENT_TIMESTAMP" else default


def _check_default(c: Column) -> None:
    """ColumnDefinition.validate: a JSONB column takes no default but NULL."""
    if c.default is not None and c.dtype.name == "JSONB":
        raise SqlError("JSONB or VARIANT type column default value just support null")


@dataclass(eq=False)
class _PendingCreate:
    """A CREATE TABLE waiting for the write lock (:func:`create_table`), and what became of it."""

    s: CreateTable
    db: str
    built: Table | SqlError  # the definition, or why it is refused
    done: threading.Event = field(default_factory=threading.Event)
    created: bool = False
    error: BaseException | None = None


@dataclass
class _CreateQueue:
    mutex: threading.Lock = field(default_factory=threading.Lock)
    waiting: list[_PendingCreate] = field(default_factory=list)


_create_queues: weakref.WeakKeyDictionary[Storage, _CreateQueue] = weakref.WeakKeyDictionary()
_create_queues_lock = threading.Lock()
# At most this many CREATE TABLEs share one DuckDB transaction.
CREATE_GROUP_MAX = 32


def create_table(st: Storage, s: CreateTable, current: str) -> None:
    """CREATE TABLE. The definition is checked and built before the write lock (it reads nothing
    stored); its error, if any, is raised where it was before: after the database's and the name's
    checks. CREATE TABLEs that arrive while the lock is held are created together, in the order they
    queued, by whichever of them takes the lock next: one DuckDB transaction (one COMMIT and WAL
    fsync, ~1 ms of CPU and more of the lock's wall time) for the group, each statement's checks as
    if alone and in that order; each is answered once the group's transaction has committed, so a
    ``kill -9`` leaves every one of them there or none. A DuckDB failure of the group retries its
    members one by one."""
    db = _db_name(s.db, current)
    try:
        built: Table | SqlError = _build_table(db, s)
    except SqlError as e:
        built = e
    pending = _PendingCreate(s, db, built)
    with _create_queues_lock:
        queue = _create_queues.setdefault(st, _CreateQueue())
    with queue.mutex:
        queue.waiting.append(pending)
    while not pending.done.is_set():
        with st.lock:
            if pending.done.is_set():
                break
            _create_group(st, [], queue)
    if pending.error is not None:
        raise pending.error


def _create_group(st: Storage, group: list[_PendingCreate], queue: _CreateQueue | None = None) -> None:
    """Create ``group``'s tables in one transaction (under the lock); each member ends done. With
    ``queue``, the group is what it holds, and what queued there while the group's statements ran
    joins it before the COMMIT (up to :data:`CREATE_GROUP_MAX`): the handler threads parse and queue
    their CREATEs while DuckDB runs (it releases the GIL), so four clients' CREATEs made groups of
    ~2 when taken only as the lock was, and a COMMIT that created tables is ~0.3 ms of DuckDB's CPU."""
    try:
        with st.transaction() as cur:
            done = 0
            while True:
                if queue is not None:
                    with queue.mutex:
                        room = CREATE_GROUP_MAX - len(group)
                        group += queue.waiting[:room]
                        queue.waiting = queue.waiting[room:]
                if done == len(group):
                    break
                for p in group[done:]:
                    try:
                        p.created = _create_one(st, cur, p)
                    except SqlError as e:  # refused before any DuckDB statement of its own
                        p.error = e
                done = len(group)
            if any(p.created for p in group):
                st.after_ddl(cur, only_created=True)
    except BaseException as e:
        for p in group:  # rolled back: the catalog in memory forgets them too
            if p.created:
                st.tables.pop((p.db, p.s.name), None)
                p.created = False
        if len(group) == 1:
            group[0].error = e
        else:
            for p in group:
                p.error = None
                _create_group(st, [p])
    finally:
        for p in group:
            p.done.set()


def _create_one(st: Storage, cur: duckdb.DuckDBPyConnection, p: _PendingCreate) -> bool:
    """One CREATE TABLE of a group, in its transaction; False: it exists and IF NOT EXISTS was given."""
    s, db = p.s, p.db
    if not st.db_exists(db):
        raise SqlError(f"Unknown database '{db}'")
    _check_table_name(s.name)
    for c in s.columns:
        _check_column_name(c.name)
        _check_default(c)
    if st.table(db, s.name) is not None:
        if s.if_not_exists:
            return False
        raise SqlError(f"Table '{s.name}' already exists")
    if isinstance(p.built, SqlError):
        raise p.built
    st.create_table(cur, p.built)
    return True


def drop_table(st: Storage, s: DropTable, current: str) -> None:
    db = _db_name(s.db, current)
    with st.transaction() as cur:
        if not st.db_exists(db):
            raise SqlError(f"Unknown database '{db}'")
        if st.table(db, s.name) is None:
            if s.if_exists:
                return
            raise SqlError(f"Unknown table '{s.name}'")
        st.drop_table(cur, db, s.name)
        st.after_ddl(cur)


def truncate_table(st: Storage, s: TruncateTable, current: str) -> None:
    db = _db_name(s.db, current)
    with st.transaction() as cur:
        st.truncate_table(cur, _require_table(st, db, s.name))


_WIDENING = ["TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT"]


def _check_type_change(old: DorisType, new: DorisType, col: str, is_key: bool) -> None:
    if old == new:
        return
    if old.name in ("CHAR", "VARCHAR", "STRING") and new.name in ("CHAR", "VARCHAR", "STRING"):
        if new.name == "CHAR" and old.name != "CHAR":  # Doris's schema change matrix has no X -> CHAR
            raise SqlError(f"Can not change {old.name} to CHAR")
        old_len = old.length or 2147483643
        new_len = new.length or 2147483643
        if new_len < old_len:
            raise SqlError("Cannot shorten string length")
        if is_key and new.name == "STRING":
            raise SqlError(f"String Type should not be used in key column[{col}].")
        return
    if old.name in _WIDENING and new.name in _WIDENING:
        if _WIDENING.index(new.name) < _WIDENING.index(old.name):
            raise SqlError(f"Can not change {old.name} to {new.name}")
        return
    if old.name in _WIDENING + ["FLOAT", "DOUBLE", "DECIMALV3", "DATEV2", "DATETIMEV2", "BOOLEAN"] and new.name in (
        "VARCHAR", "STRING"
    ):
        return
    if old.name == "FLOAT" and new.name == "DOUBLE":
        return
    if old.name == "DECIMALV3" and new.name == "DECIMALV3":
        if (new.precision or 0) >= (old.precision or 0) and (new.scale or 0) == (old.scale or 0):
            return
        raise SqlError(f"Can not change {old.sql().upper()} to {new.sql().upper()}")
    if old.name == "DATETIMEV2" and new.name == "DATETIMEV2" and (new.precision or 0) >= (old.precision or 0):
        return
    if old.name == "DATEV2" and new.name == "DATETIMEV2":
        return
    raise SqlError(f"Can not change {old.name} to {new.name}")


def alter_table(st: Storage, s: AlterTable, current: str) -> None:
    db = _db_name(s.db, current)
    with st.transaction() as cur:
        t0 = _require_table(st, db, s.name)
        t = copy.deepcopy(t0)
        target = data_ref(t.db, t.name)
        renamed_to: str | None = None
        for op in s.ops:
            if op.kind == "add":
                c = op.column
                assert c is not None
                if t.column(c.name) is not None:
                    raise SqlError(f"Can not add column which already exists in base table: {c.name}")
                if c.name.upper() in HIDDEN_COLUMNS:
                    raise SqlError(f"Incorrect column name '{c.name}'")
                _check_column_name(c.name)
                _check_default(c)
                if c.is_key and t.is_unique:
                    raise SqlError("Can not add key column to Unique data model table with light schema change")
                c.uid = t.next_uid
                t.next_uid += 1
                dflt = quote_default(c)
                cur.execute(
                    f"ALTER TABLE {target} ADD COLUMN {quote_ident(c.name)} {c.dtype.duck()}"
                    + (f" DEFAULT {dflt}" if dflt else "")
                )
                if op.position == "FIRST":
                    raise SqlError("Invalid column order. value should be after key column")
                if op.position and op.position.startswith("AFTER "):
                    after = t.column(op.position[6:])
                    if after is None:
                        raise SqlError(f"Column[{op.position[6:]}] does not exist")
                    idx = t.columns.index(after) + 1
                    if idx < len(t.key_names):
                        raise SqlError("Invalid column order. value should be after key column")
                    t.columns.insert(idx, c)
                else:
                    t.columns.append(c)
            elif op.kind == "drop":
                c = t.column(op.name or "")
                if c is None:
                    raise SqlError(f"Column does not exists: {op.name}")
                if c.is_key and t.is_unique:
                    raise SqlError("Can not drop key column in Unique data model table")
                if c.is_key and len(t.key_names) == 1:
                    raise SqlError("Can not drop all key columns")
                if t.sequence_col and t.sequence_col.lower() == c.name.lower():
                    raise SqlError(f"Can not drop sequence mapping column[{c.name}] in Unique data model table[{t.name}]")
                if len(t.columns) == 1:
                    raise SqlError("Can not drop all columns")
                cur.execute(f"ALTER TABLE {target} DROP COLUMN {quote_ident(c.name)}")
                t.columns.remove(c)
                if c.is_key:
                    t.key_names = [k for k in t.key_names if k.lower() != c.name.lower()]
                    t.distribution = [d for d in t.distribution if d.lower() != c.name.lower()]
            elif op.kind == "rename_column":
                c = t.column(op.name or "")
                if c is None:
                    raise SqlError(f"Column[{op.name}] does not exists")
                new = op.new_name or ""
                if t.column(new) is not None and new.lower() != c.name.lower():
                    raise SqlError(f"Column name[{new}] is already used")
                if new.upper() in HIDDEN_COLUMNS:
                    raise SqlError(f"Incorrect column name '{new}'")
                _check_column_name(new)
                cur.execute(f"ALTER TABLE {target} RENAME COLUMN {quote_ident(c.name)} TO {quote_ident(new)}")
                old = c.name
                c.name = new
                t.key_names = [new if k == old else k for k in t.key_names]
                t.distribution = [new if k == old else k for k in t.distribution]
                if t.sequence_col == old:
                    t.properties["function_column.sequence_col"] = new
            elif op.kind == "modify":
                nc = op.column
                assert nc is not None
                c = t.column(nc.name)
                if c is None:
                    raise SqlError(f"Column[{nc.name}] does not exists")
                _check_type_change(c.dtype, nc.dtype, c.name, c.is_key)
                nullable = nc.nullable if op.null_spec else c.nullable
                if c.nullable and not nullable:
                    raise SqlError("Can not change from nullable to non-nullable")
                if _default_key(c.default) != _default_key(nc.default):
                    # Column.checkSchemaChangeAllowed: the MODIFY restates the column's default as it is
                    # (a MODIFY without DEFAULT of a column that has one is a change, and refused)
                    raise SqlError("Can not change default value")
                if c.dtype != nc.dtype:
                    cur.execute(f"ALTER TABLE {target} ALTER COLUMN {quote_ident(c.name)} TYPE {nc.dtype.duck()}")
                    if t.sequence_col and t.sequence_col.lower() == c.name.lower():
                        cur.execute(f"ALTER TABLE {target} ALTER COLUMN \"__DORIS_SEQUENCE_COL__\" TYPE {nc.dtype.duck()}")
                c.type = nc.type
                c.nullable = nullable
                if op.comment_spec:
                    c.comment = nc.comment
                if op.position:
                    raise SqlError("Modifying column order with MODIFY COLUMN is not supported by the stand-in")
            elif op.kind == "modify_comment":
                c = t.column(op.name or "")
                if c is None:
                    raise SqlError(f"Unknown column '{op.name}' in '{t.name}'")
                c.comment = op.comment or ""
            elif op.kind == "table_comment":
                t.comment = op.comment or ""
            elif op.kind == "rename":
                new = op.new_name or ""
                _check_table_name(new)
                if st.table(db, new) is not None:
                    raise SqlError(f"Table '{new}' already exists")
                renamed_to = new
            elif op.kind == "set":
                for k, v in op.properties.items():
                    if k.lower().startswith("function_column"):
                        raise SqlError(f"Unknown table property: {k}")
                    t.properties[k.lower()] = v
        t.schema_version += 1
        if renamed_to:
            cur.execute(f"DROP VIEW IF EXISTS {quote_ident(db)}.{quote_ident(t.name)}")
            cur.execute(f"ALTER TABLE {target} RENAME TO {quote_ident(renamed_to)}")
            cur.execute("DELETE FROM __standin.tables WHERE db = ? AND name = ?", [db, t.name])
            st.tables.pop((db, t.name), None)
            t.name = renamed_to
        st.save_table(cur, t)
        st.rebuild_view(cur, t)
        st.tables[(db, t.name)] = t
        st.after_ddl(cur)
