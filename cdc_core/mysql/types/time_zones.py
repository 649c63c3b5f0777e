"""The ``server-time-zone`` option: the zone TIMESTAMP values are rendered in for Doris.

MySQL stores TIMESTAMP in UTC; both read paths shift it to this zone (DATETIME is never shifted).
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from zoneinfo import ZoneInfo

_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2}):?(\d{2})$")


@lru_cache(maxsize=64)
def parse_tz(tz: str | dt.tzinfo | None) -> dt.tzinfo:
    """``"UTC"``, ``"+08:00"`` or an IANA name (``"Asia/Shanghai"``) → tzinfo."""
    if tz is None:
        return dt.UTC
    if isinstance(tz, dt.tzinfo):
        return tz
    text = tz.strip()
    if text.upper() in ("UTC", "Z", "GMT", "+00:00", "-00:00", "SYSTEM_UTC"):
        return dt.UTC
    m = _OFFSET.match(text)
    if m:
        sign = 1 if m.group(1) == "+" else -1
        return dt.timezone(sign * dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3))))
    try:
        return ZoneInfo(text)
    except Exception as exc:  # noqa: BLE001 - any lookup failure is the same user error
        raise ValueError(f"unknown time zone {tz!r}: use 'UTC', an offset like '+08:00' or an IANA name") from exc


def is_utc(tz: dt.tzinfo) -> bool:
    """UTC by any of its names: TIMESTAMP values then need no shifting."""
    if isinstance(tz, ZoneInfo):
        return tz.key in ("UTC", "Etc/UTC", "Etc/UCT", "UCT", "Zulu", "Etc/Zulu")
    return tz.utcoffset(None) == dt.timedelta(0)


def offset_name(tz: dt.tzinfo) -> str:
    """A fixed-offset zone as Arrow names it (``+08:00``)."""
    offset = tz.utcoffset(None) or dt.timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
