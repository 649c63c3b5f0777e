"""MySQL's binary row formats: DECIMAL group sizes, DATETIME2 dates, fractional seconds, charsets.

The generated row decoders (``row_decoder``) call these, and embed the lookup tables below, to
read the same bytes mysql-replication reads and give the same values.
"""

from __future__ import annotations

import calendar
import codecs

from pymysqlreplication.row_event import RowsEvent

COMPRESSED = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4]  # bytes of a DECIMAL's leftover 0-8 digits


def python_codec(charset_name: str | None) -> str | None:
    """The Python codec mysql-replication decodes a column with (None: it keeps bytes)."""
    if charset_name is None:
        return None
    name = RowsEvent.charset_to_encoding(charset_name)
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def valid_date(y: int, m: int, d: int) -> bool:
    """A real calendar date (zero and partly-zero dates are not)."""
    return y > 0 and 0 < m <= 12 and 0 < d <= (28 if d <= 28 else calendar.monthrange(y, m)[1])


DAYS: dict[int, str] = {}
HM = [f"{h:02d}:{m:02d}:" for h in range(32) for m in range(64)]  # index: hour * 64 + minute
S2 = [f"{x:02d}" for x in range(64)]
FRAC = {n: [f".{x:0{n}d}" for x in range(10 ** n)] for n in (1, 2, 3)}


def day_text(ymd: int) -> str:
    """``'YYYY-MM-DD '`` for DATETIME2's 22 date bits, or '' for a zero/invalid date (cached)."""
    ym, day = ymd >> 5, ymd & 31
    year, month = ym // 13, ym % 13
    text = f"{year:04d}-{month:02d}-{day:02d} " if valid_date(year, month, day) else ""
    if len(DAYS) < 100_000:
        DAYS[ymd] = text
    return text


def fsp_size(fsp: int) -> int:
    """Bytes of a fractional-seconds field with ``fsp`` digits."""
    return (fsp + 1) // 2


def micro_expr(at: str, fsp: int) -> str:
    """Source for the microseconds of a fractional-seconds field at ``at`` (as mysql-replication reads it)."""
    if not fsp:
        return "0"
    n = fsp_size(fsp)
    raw = f"from_bytes(buf[{at}:{at} + {n}], 'big')"
    if fsp % 2:
        raw = f"({raw} // 10)"
    return f"{raw} * {10 ** (6 - fsp)}"
