"""A TableMap without column names (``binlog_row_metadata=MINIMAL``) bound to the schema history.

With ``binlog_row_metadata=FULL`` each TableMap event names its columns and carries their
character sets and ENUM/SET values. With ``MINIMAL`` (MySQL 8.0's default) or on MySQL 5.7 it
carries only the column types, their type metadata and signedness/charset ids, and
mysql-replication then decodes every row as ``UNKNOWN_COL0, UNKNOWN_COL1, …`` — text as UTF-8,
ENUM and SET as None, unsigned integers as signed.

The schema history (the live schema read at start, evolved by every parsed DDL:
``cdc_core.mysql.schema_history``) knows the columns in their binlog order at this offset. Before
any row of the event is decoded, :func:`bind_table_map` checks that the TableMap agrees with the
history — the same number of columns, each binlog type one the history's type is written as, the
same DECIMAL precision, string byte length, ENUM/SET size and (when the TableMap carries them)
character sets — and then writes the history's names, charsets, signedness and ENUM/SET values
onto the TableMap's columns, so the library and :mod:`cdc_core.mysql.row_decoder` decode exactly
as with ``FULL``. When they disagree, :class:`SchemaHistoryMismatchError` stops the read naming
the table and the fix: a row is never mapped to columns by a guessed position.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from pymysql.charset import charset_by_name
from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.row_event import TableMapEvent, find_charset

from cdc_core.model.schema import Column, TableSchema
from cdc_core.mysql.ddl.column_definitions import charset_of_collation

log = logging.getLogger(__name__)

_VALUES = re.compile(r"'((?:[^'\\]|''|\\.)*)'")

# DATA_TYPE (information_schema / the DDL parser) → the binlog column types it is written as
_BINLOG_TYPES: dict[str, frozenset[int]] = {
    "tinyint": frozenset({FIELD_TYPE.TINY}),
    "bool": frozenset({FIELD_TYPE.TINY}),
    "boolean": frozenset({FIELD_TYPE.TINY}),
    "smallint": frozenset({FIELD_TYPE.SHORT}),
    "mediumint": frozenset({FIELD_TYPE.INT24}),
    "int": frozenset({FIELD_TYPE.LONG}),
    "integer": frozenset({FIELD_TYPE.LONG}),
    "bigint": frozenset({FIELD_TYPE.LONGLONG}),
    "float": frozenset({FIELD_TYPE.FLOAT}),
    "double": frozenset({FIELD_TYPE.DOUBLE}),
    "real": frozenset({FIELD_TYPE.DOUBLE}),
    "decimal": frozenset({FIELD_TYPE.NEWDECIMAL}),
    "numeric": frozenset({FIELD_TYPE.NEWDECIMAL}),
    "date": frozenset({FIELD_TYPE.DATE, FIELD_TYPE.NEWDATE}),
    "datetime": frozenset({FIELD_TYPE.DATETIME2, FIELD_TYPE.DATETIME}),
    "timestamp": frozenset({FIELD_TYPE.TIMESTAMP2, FIELD_TYPE.TIMESTAMP}),
    "time": frozenset({FIELD_TYPE.TIME2, FIELD_TYPE.TIME}),
    "year": frozenset({FIELD_TYPE.YEAR}),
    "bit": frozenset({FIELD_TYPE.BIT}),
    "char": frozenset({FIELD_TYPE.STRING}),
    "binary": frozenset({FIELD_TYPE.STRING}),
    "varchar": frozenset({FIELD_TYPE.VARCHAR}),
    "varbinary": frozenset({FIELD_TYPE.VARCHAR}),
    "enum": frozenset({FIELD_TYPE.ENUM}),
    "set": frozenset({FIELD_TYPE.SET}),
    "tinytext": frozenset({FIELD_TYPE.BLOB}),
    "text": frozenset({FIELD_TYPE.BLOB}),
    "mediumtext": frozenset({FIELD_TYPE.BLOB}),
    "longtext": frozenset({FIELD_TYPE.BLOB}),
    "tinyblob": frozenset({FIELD_TYPE.BLOB}),
    "blob": frozenset({FIELD_TYPE.BLOB}),
    "mediumblob": frozenset({FIELD_TYPE.BLOB}),
    "longblob": frozenset({FIELD_TYPE.BLOB}),
    "json": frozenset({FIELD_TYPE.JSON, FIELD_TYPE.BLOB}),  # MariaDB's JSON is LONGTEXT
    "geometry": frozenset({FIELD_TYPE.GEOMETRY}),
    "point": frozenset({FIELD_TYPE.GEOMETRY}),
    "linestring": frozenset({FIELD_TYPE.GEOMETRY}),
    "polygon": frozenset({FIELD_TYPE.GEOMETRY}),
    "multipoint": frozenset({FIELD_TYPE.GEOMETRY}),
    "multilinestring": frozenset({FIELD_TYPE.GEOMETRY}),
    "multipolygon": frozenset({FIELD_TYPE.GEOMETRY}),
    "geometrycollection": frozenset({FIELD_TYPE.GEOMETRY}),
    "uuid": frozenset({FIELD_TYPE.STRING}),  # MariaDB: fixed binary strings in the binlog
    "inet6": frozenset({FIELD_TYPE.STRING}),
    "inet4": frozenset({FIELD_TYPE.STRING}),
}

# bytes per character, for the string byte lengths the TableMap carries
_MAX_BYTES = {"latin1": 1, "ascii": 1, "binary": 1, "utf8mb3": 3, "utf8": 3, "utf8mb4": 4, "ucs2": 2,
              "utf16": 4, "utf16le": 4, "utf32": 4, "cp1251": 1, "cp1250": 1, "latin2": 1, "greek": 1,
              "hebrew": 1, "gbk": 2, "big5": 2, "sjis": 2, "ujis": 3, "euckr": 2, "gb2312": 2}
_BINARY_TYPES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "uuid", "inet6", "inet4"}
_MARIADB_FIXED = {"uuid", "inet6", "inet4"}  # binary strings of a fixed size; no charset, no char length
_TYPE_NAMES = {v: k for k, v in vars(FIELD_TYPE).items() if isinstance(v, int) and k.isupper()}


class SchemaHistoryMismatchError(RuntimeError):
    """The binlog's TableMap has no column names and disagrees with the schema history."""


def has_binlog_names(table: Any) -> bool:
    """Whether the TableMap named its columns (``binlog_row_metadata=FULL``)."""
    return all(c.name for c in table.columns)


def remember_charsets(ev: TableMapEvent) -> None:
    """Keep the TableMap event's charset ids on its table (the rows events only see the table)."""
    meta = getattr(ev, "optional_metadata", None)
    table = getattr(ev, "table_obj", None)
    if table is not None and meta is not None:
        table.__dict__["_tidemark_charsets"] = list(getattr(meta, "charset_collation_list", None) or [])
        table.__dict__["_tidemark_dbms"] = getattr(ev, "dbms", None) or "mysql"


def _charset(column: Column) -> str | None:
    if column.data_type.lower() in _BINARY_TYPES:
        return "binary"
    name = (column.charset or "").lower() or None
    return "utf8mb3" if name == "utf8" else name


def _encoding(charset: str | None) -> str | None:
    """What mysql-replication's FULL path stores in ``character_set_name`` for a charset."""
    if charset is None:
        return None
    found = charset_by_name(charset)
    return found.encoding if found is not None else charset


def _values(column: Column) -> list[str]:
    body = column.column_type[column.column_type.find("("):]
    out = []
    for raw in _VALUES.findall(body):
        out.append(re.sub(r"\\(.)", r"\1", raw.replace("''", "'")))
    return out


def _set_size(n: int) -> int:
    return 8 if n > 32 else (n + 7) // 8


def _binlog_charset(charset_id: int | None, dbms: str) -> str | None:
    if charset_id is None:
        return None
    name = find_charset(str(charset_id), dbms=dbms)[2]
    return None if not name else "utf8mb3" if name.lower() == "utf8" else name.lower()


def _text_charset(bcol: Any, column: Column, binlog_charset: str | None) -> str | None:
    """The charset a string column's bytes are decoded by: the history's; when the history does not
    know it (a ``CREATE TABLE`` read from the binlog that named none takes the database's default),
    the one the TableMap carries."""
    if column.data_type.lower() == "json":
        return _charset(column) or binlog_charset or "utf8mb4"  # MariaDB's JSON is utf8mb4 LONGTEXT
    return _charset(column) or binlog_charset


def _problem(bcol: Any, column: Column, binlog_charset: str | None) -> str | None:  # noqa: PLR0911
    """Why binlog column ``bcol`` cannot be the history's ``column`` (None: it can)."""
    data_type = column.data_type.lower()
    wanted = _BINLOG_TYPES.get(data_type)
    type_name = _TYPE_NAMES.get(bcol.type, str(bcol.type))
    if wanted is None:
        return f"its type {column.column_type!r} is not one Tidemark can match to a binlog column without names"
    if bcol.type not in wanted:
        return f"the binlog has a {type_name} column where the history has {column.column_type!r}"
    if bcol.type == FIELD_TYPE.NEWDECIMAL and column.numeric_precision is not None and (
            bcol.precision, bcol.decimals) != (column.numeric_precision, column.numeric_scale or 0):
        return (f"the binlog has DECIMAL({bcol.precision},{bcol.decimals}) where the history has "
                f"{column.column_type!r}")
    if bcol.type == FIELD_TYPE.ENUM:
        n = len(_values(column))
        if bcol.size != (1 if n < 256 else 2):
            return f"the binlog's ENUM has {bcol.size}-byte values, the history's {n} values need another size"
    if bcol.type == FIELD_TYPE.SET:
        n = len(_values(column))
        if bcol.size != _set_size(n):
            return f"the binlog's SET has {bcol.size}-byte values, the history's {n} values need another size"
    if bcol.type not in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.BLOB) or data_type in _MARIADB_FIXED:
        return None
    charset = _text_charset(bcol, column, binlog_charset)
    if charset is None:
        return (f"the history does not know the character set of {column.column_type!r} and the binlog does not "
                "carry it, so its bytes cannot be decoded exactly (name the charset in the CREATE TABLE, or use FULL)")
    if bcol.type != FIELD_TYPE.BLOB and column.char_length is not None and charset in _MAX_BYTES:
        expected = column.char_length * (1 if data_type in _BINARY_TYPES else _MAX_BYTES[charset])
        if bcol.max_length != expected:
            return (f"the binlog's column holds {bcol.max_length} bytes where the history's {column.column_type!r} "
                    f"in {charset} holds {expected}")
    if binlog_charset is not None and binlog_charset != charset:
        return f"the binlog's column is in {binlog_charset} where the history has {charset}"
    return None


def _mismatch(schema: TableSchema, detail: str) -> SchemaHistoryMismatchError:
    return SchemaHistoryMismatchError(
        f"binlog rows of {schema.table_id} carry no column names (binlog_row_metadata=MINIMAL, or a server "
        f"without the setting) and the table's schema history is out of step with the binlog: {detail}. "
        f"No row was mapped. The history says: {', '.join(f'{c.name} {c.column_type}' for c in schema.columns)}. "
        "Fix: set binlog_row_metadata=FULL on the server (SET GLOBAL binlog_row_metadata = 'FULL' and in "
        f"my.cnf), or re-snapshot {schema.table_id} from a point after the change so the history is read anew."
    )


def use_history_members(table: Any, schema: TableSchema) -> None:
    """The ENUM/SET members of a named TableMap (``FULL``) in a charset other than UTF-8 → the history's.

    mysql-replication decodes the members the TableMap carries as UTF-8 whatever their charset: a
    member it cannot decode becomes ``''`` (macce or latin2 ``'Ł'`` would arrive as an empty ENUM) and
    one whose bytes happen to be UTF-8 reads as other text. The history's members are the server's own
    text (``information_schema`` or the parsed DDL). When the two disagree on the number of members,
    :class:`SchemaHistoryMismatchError` stops the read: a row is never given a guessed member.
    """
    for bcol in table.columns:
        if bcol.type not in (FIELD_TYPE.ENUM, FIELD_TYPE.SET) or not bcol.name \
                or not schema.has_column(bcol.name):
            continue
        column = schema.column(bcol.name)
        charset = _charset(column) or charset_of_collation(getattr(bcol, "collation_name", None) or "utf8mb4")
        if charset in ("utf8mb3", "utf8mb4", "ascii"):
            continue  # the library's UTF-8 decoding is exact
        members = _values(column)
        if bcol.type == FIELD_TYPE.ENUM:
            given = list(getattr(bcol, "enum_values", None) or [""])[1:]
            if len(given) != len(members):
                raise _mismatch(schema, f"column {bcol.name}: the binlog's ENUM has {len(given)} values, the "
                                        f"history's {column.column_type!r} {len(members)}")
            bcol.enum_values = ["", *members]
        else:
            given = list(getattr(bcol, "set_values", None) or [])
            if len(given) != len(members):
                raise _mismatch(schema, f"column {bcol.name}: the binlog's SET has {len(given)} values, the "
                                        f"history's {column.column_type!r} {len(members)}")
            bcol.set_values = members


def bind_table_map(table: Any, schema: TableSchema) -> None:
    """Give a TableMap without names the history's names, charsets, signedness and ENUM/SET values.

    Raises :class:`SchemaHistoryMismatchError` (and changes nothing) when the TableMap's columns
    disagree with ``schema``.
    """
    bcols = table.columns
    if len(bcols) != len(schema.columns):
        types = ", ".join(_TYPE_NAMES.get(c.type, str(c.type)) for c in bcols)
        raise _mismatch(schema, f"the binlog row has {len(bcols)} columns ({types}), the history "
                                f"{len(schema.columns)}")
    dbms = table.__dict__.get("_tidemark_dbms", "mysql")
    charsets = table.__dict__.get("_tidemark_charsets") or []
    character = [i for i, c in enumerate(bcols) if TableMapEvent._is_character_column(c.type, dbms=dbms)]
    charset_ids: dict[int, int] = dict(zip(character, charsets, strict=False)) \
        if len(charsets) == len(character) else {}
    binlog_charsets = [_binlog_charset(charset_ids.get(i), dbms) for i in range(len(bcols))]
    for i, (bcol, column) in enumerate(zip(bcols, schema.columns, strict=True)):
        problem = _problem(bcol, column, binlog_charsets[i])
        if problem is not None:
            raise _mismatch(schema, f"column {i + 1} ({column.name}): {problem}")
    for bcol, column, binlog_charset in zip(bcols, schema.columns, binlog_charsets, strict=True):
        bcol.name = column.name
        bcol.unsigned = column.unsigned
        if bcol.type in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.BLOB):
            charset = _text_charset(bcol, column, binlog_charset)
            bcol.__dict__["_tidemark_charset"] = charset  # binlog_values decodes text with it, exactly
            bcol.character_set_name = _encoding(charset)
        elif bcol.type in (FIELD_TYPE.ENUM, FIELD_TYPE.SET):
            bcol.character_set_name = _encoding(_charset(column))  # values come from the history: no decoding
        if bcol.type == FIELD_TYPE.ENUM:
            bcol.enum_values = ["", *_values(column)]
        elif bcol.type == FIELD_TYPE.SET:
            bcol.set_values = _values(column)
    log.debug("bound the TableMap of %s to its schema history (no column names in the binlog)", schema.table_id)
