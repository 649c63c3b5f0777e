"""MySQL's internal geometry format (SRID + WKB) → WKT, the text Doris receives."""

from __future__ import annotations

import struct

_WKB_NAMES = {1: "POINT", 2: "LINESTRING", 3: "POLYGON", 4: "MULTIPOINT", 5: "MULTILINESTRING",
              6: "MULTIPOLYGON", 7: "GEOMETRYCOLLECTION"}


def _num(x: float) -> str:
    if x == int(x) and abs(x) < 1e17:
        return str(int(x))
    return repr(x)


def wkb_to_wkt(value: bytes) -> str:
    """MySQL's internal geometry (4-byte SRID + WKB) → WKT, ``SRID=n;`` prefixed when SRID ≠ 0.

    Unparseable bytes become ``"WKB:<hex>"`` rather than failing the read.
    """
    data = bytes(value)
    try:
        srid = struct.unpack_from("<I", data, 0)[0]
        text, _ = _wkb(data, 4)
    except (struct.error, KeyError, ValueError):
        return "WKB:" + data.hex()
    return f"SRID={srid};{text}" if srid else text


def _wkb(data: bytes, pos: int) -> tuple[str, int]:
    order = "<" if data[pos] == 1 else ">"
    gtype = struct.unpack_from(order + "I", data, pos + 1)[0] % 1000
    pos += 5
    name = _WKB_NAMES[gtype]

    def points(p: int) -> tuple[str, int]:
        n = struct.unpack_from(order + "I", data, p)[0]
        p += 4
        coords = []
        for _ in range(n):
            x, y = struct.unpack_from(order + "dd", data, p)
            p += 16
            coords.append(f"{_num(x)} {_num(y)}")
        return ",".join(coords), p

    if gtype == 1:
        x, y = struct.unpack_from(order + "dd", data, pos)
        return f"POINT({_num(x)} {_num(y)})", pos + 16
    if gtype == 2:
        body, pos = points(pos)
        return f"LINESTRING({body})", pos
    if gtype == 3:
        rings = struct.unpack_from(order + "I", data, pos)[0]
        pos += 4
        parts = []
        for _ in range(rings):
            body, pos = points(pos)
            parts.append(f"({body})")
        return f"POLYGON({','.join(parts)})", pos
    count = struct.unpack_from(order + "I", data, pos)[0]
    pos += 4
    parts = []
    for _ in range(count):
        text, pos = _wkb(data, pos)
        if gtype in (4, 5, 6):
            text = text[text.index("(") :]  # MULTIPOINT((1 2),(3 4)) style, as MySQL prints
        parts.append(text)
    return f"{name}({','.join(parts)})", pos
