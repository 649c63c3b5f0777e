"""MySQL column values → the values Tidemark sends to Doris, on both read paths.

One module per concern: ``kinds`` (reading a column type), ``doris_mapping`` (Doris and Arrow
types), ``values`` (Python values, the binlog path), ``arrow`` (Arrow batches, the snapshot path),
``time_zones``, ``charsets``, ``spatial``, ``fixed_binary`` (MariaDB's UUID / INET6 / INET4).

Two paths read rows and must agree value for value:

* the **binlog path** gets Python objects from pymysql / pymysqlreplication and converts them one
  by one with :func:`to_doris_value` (or a :class:`DorisValueConverter` bound to the options);
* the **snapshot path** reads chunks as Arrow batches (connectorx). :func:`select_expression`
  tells the chunk query what to ask MySQL for (some types are rendered by the server, where it
  is exact and free), and :func:`arrow_to_doris` turns the raw batch into the same values,
  column at a time.

The Doris side follows Flink CDC's MySQL → CDC → Doris mapping (``DorisTypeMapper``), with the
choices below where Flink is silent or lossy (each is what a Doris user would want to query):

==========================  ==========================  ======================================
MySQL                       Doris DDL                   value sent (JSON)
==========================  ==========================  ======================================
TINYINT(1) (as boolean)     BOOLEAN                     true / false
TINYINT / UNSIGNED          TINYINT / SMALLINT          int
SMALLINT / UNSIGNED         SMALLINT / INT              int
MEDIUMINT (±), INT          INT                         int
INT UNSIGNED, BIGINT        BIGINT                      int
BIGINT UNSIGNED             DECIMALV3(20,0)             int (exact up to 18446744073709551615)
FLOAT / DOUBLE              FLOAT / DOUBLE              number (FLOAT: shortest float32 repr)
DECIMAL(p,s)                DECIMALV3(p,s), p>38 STRING string with exactly s decimals
BIT(1) / BIT(n≤63) / BIT(64) BOOLEAN / BIGINT / LARGEINT true/false / int
YEAR                        INT                         int (0 for YEAR 0000)
DATE                        DATEV2                      "YYYY-MM-DD"
DATETIME(p)                 DATETIMEV2(p)               "YYYY-MM-DD HH:MM:SS[.p digits]"
TIMESTAMP(p)                DATETIMEV2(p)               same, rendered in ``tz``
TIME(p)                     STRING                      "[-]HH:MM:SS[.p digits]" (hours may be >24)
CHAR(n) / VARCHAR(n)        CHAR/VARCHAR(n×bytes/char) string (UTF-8); STRING when ≥ 65533 bytes
TEXT types, ENUM, SET       STRING                      string; SET as "a,b" in definition order
BINARY/VARBINARY/BLOB       STRING                      base64 (BINARY(n) right-padded with 0x00)
JSON                        JSONB                       the JSON text
GEOMETRY & spatial          STRING                      WKT (``SRID=n;`` prefix when SRID ≠ 0)
UUID / INET6 / INET4        VARCHAR(36 / 39 / 15)       the server's text (``fixed_binary``)
==========================  ==========================  ======================================

MariaDB's UUID / INET6 / INET4 are a VARCHAR as wide as their longest text (all ASCII), not
STRING: the width is exact, and a VARCHAR can be a Doris key (these are often primary keys).

Bytes per character: Flink multiplies by 3, which truncates 4-byte UTF-8 (emoji) in utf8mb4
columns; we multiply by 4 for utf8mb4 and by 3 otherwise.

Invalid stored values never crash a read; they become a documented value:

* zero or partly-zero DATE / DATETIME / TIMESTAMP (``0000-00-00``, ``2024-00-10``) → NULL when
  the column is nullable, else the epoch (``1970-01-01`` / ``1970-01-01 00:00:00[.000…]``),
  as Debezium does. (pymysqlreplication cannot tell a zero TIMESTAMP from the epoch, which is
  itself not a valid TIMESTAMP, so ``1970-01-01 00:00:00`` UTC from the binlog is a zero.)
* an empty SET is ``""``, as MySQL reads it (the binlog library reports it as NULL, but says
  so in the row's ``none_sources``, which ``binlog_values`` reads); NULL stays NULL.
* YEAR ``0000`` → 0 (pymysqlreplication reports it as 1900, which YEAR cannot hold).
"""

from cdc_core.mysql.types.arrow import arrow_to_doris, select_expression
from cdc_core.mysql.types.doris_mapping import doris_arrow_type, doris_type
from cdc_core.mysql.types.kinds import TypeKind, kind_of
from cdc_core.mysql.types.spatial import wkb_to_wkt
from cdc_core.mysql.types.time_zones import parse_tz
from cdc_core.mysql.types.values import DorisValueConverter, rows_to_doris, to_doris_value

__all__ = [
    "DorisValueConverter",
    "TypeKind",
    "arrow_to_doris",
    "doris_arrow_type",
    "doris_type",
    "kind_of",
    "parse_tz",
    "rows_to_doris",
    "select_expression",
    "to_doris_value",
    "wkb_to_wkt",
]
