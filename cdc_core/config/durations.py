"""Flink-style durations (``30s``, ``3min``, ``500ms``, ``1 h``) as seconds."""

from __future__ import annotations

import re

_UNITS = {
    "ms": 0.001, "milli": 0.001, "millis": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_duration(value: object) -> float:
    """Seconds from a number (milliseconds, as Flink reads a bare number) or a ``<n><unit>`` string."""
    if isinstance(value, bool):
        raise ValueError("expected a duration like '30s', got a boolean")
    if isinstance(value, int | float):
        return float(value) / 1000.0
    match = _PATTERN.match(str(value))
    if not match:
        raise ValueError(f"expected a duration like '30s' or '3min', got {value!r}")
    number, unit = float(match.group(1)), match.group(2).lower() or "ms"
    if unit not in _UNITS:
        raise ValueError(f"unknown duration unit {unit!r} in {value!r} (use ms, s, min, h or d)")
    return number * _UNITS[unit]
