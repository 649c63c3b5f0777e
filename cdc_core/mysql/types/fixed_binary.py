"""MariaDB's fixed-binary types — ``UUID``, ``INET6``, ``INET4`` — as the text the server prints.

The two read paths see these types differently, and both must give the text a ``SELECT`` shows:

* the **snapshot** asks the server for the text (``CAST(col AS CHAR)``, see ``arrow.py``), so it
  is MariaDB's own rendering by construction;
* the **binlog** carries the value as a binary ``STRING`` column of 16 (4) bytes in the type's
  *in-memory* order — for UUID the natural order of its hex digits, even where the table stores
  the segments swapped for indexing (MariaDB's ``UUID::pack`` converts the record back before
  writing the binlog) — with trailing ``0x00`` bytes cut off, as for any ``BINARY(n)``. So a value
  may arrive short (``'2001:db8::'``, ``'::'`` arrive as fewer than 16 bytes, or as ``''``), and is
  padded back before it is rendered here.

Rendering follows MariaDB's code: UUID as lowercase ``8-4-4-4-12`` hex; INET6 as MySQL's
``INET6_NTOA`` prints it (the longest run of zero groups, leftmost on a tie, even a run of one,
becomes ``::``; an address whose first 96 bits are zero, or 80 zero bits then ``ffff``, ends in
dotted IPv4 — ``::1.2.3.4``, ``::ffff:1.2.3.4`` — unless the zero run is longer than that, as in
``::1``); INET4 as dotted decimal. ``tests/binlog/test_fixed_binary.py`` checks every rule against
the server.

:func:`sort_key` maps the text back to bytes that sort as MariaDB sorts the column (chunk bounds
and the binlog filter compare keys in Python): INET6/INET4 byte-wise; UUID by its in-record form,
in which a UUID of version 1-5 and variant 1 has its segments reversed (node first, time-low
last), so that time-based UUIDs index in time order. MariaDB's source also keeps an older UUID
storage that swaps *every* value (``UUID<true>``, for tables made by releases before that rule);
information_schema names both ``uuid``, and for such a table the order of UUIDs other than
versions 1-5 would differ from :func:`sort_key`'s. The tests run the current form (MariaDB 10.11).
"""

from __future__ import annotations

import ipaddress
from typing import Any

UUID_LENGTH = 16
INET6_LENGTH = 16
INET4_LENGTH = 4
# The longest text of each type: 36 for a UUID, 39 for eight full INET6 groups (an IPv4-mapped
# address is shorter: '::ffff:255.255.255.255' is 22), 15 for INET4. All ASCII.
TEXT_WIDTH = {"uuid": 36, "inet6": 39, "inet4": 15}
_LENGTH = {"uuid": UUID_LENGTH, "inet6": INET6_LENGTH, "inet4": INET4_LENGTH}


def _raw(type_name: str, value: bytes | bytearray | memoryview | str) -> bytes:
    """The value's bytes, right-padded with the 0x00 bytes the binlog cut off."""
    if isinstance(value, str):
        if value:
            raise ValueError(f"a {type_name.upper()} value from the binlog is text {value!r}, expected its bytes")
        value = b""  # mysql-replication reads an all-zero (fully trimmed) value as ''
    raw = bytes(value)
    length = _LENGTH[type_name]
    if len(raw) > length:
        raise ValueError(f"a {type_name.upper()} value has {len(raw)} bytes, at most {length} expected: {raw.hex()}")
    return raw.ljust(length, b"\x00")


def uuid_text(raw: bytes) -> str:
    """16 bytes in UUID memory order → ``xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`` (lowercase)."""
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def inet6_text(raw: bytes) -> str:
    """16 bytes → INET6 text exactly as MariaDB prints it (MySQL's ``ipv6_to_str``)."""
    words = [int.from_bytes(raw[i : i + 2], "big") for i in range(0, 16, 2)]
    gap_pos, gap_len = -1, 0
    run_pos, run_len = -1, 0
    for i, word in enumerate([*words, 1]):  # a sentinel non-zero word closes a trailing run
        if word == 0:
            if run_pos < 0:
                run_pos, run_len = i, 0
            run_len += 1
        elif run_pos >= 0:
            if run_len > gap_len:  # strictly longer: the leftmost of equal runs wins
                gap_pos, gap_len = run_pos, run_len
            run_pos = -1
    if gap_pos == 0 and (gap_len == 6 or (gap_len == 5 and words[5] == 0xFFFF)):
        return ("::" if gap_len == 6 else "::ffff:") + ".".join(str(b) for b in raw[12:])
    out: list[str] = []
    i = 0
    while i < 8:
        if i == gap_pos:
            out.append("::" if i == 0 else ":")
            i += gap_len
            continue
        out.append(f"{words[i]:x}" + (":" if i != 7 else ""))
        i += 1
    return "".join(out)


def inet4_text(raw: bytes) -> str:
    """4 bytes → dotted decimal."""
    return ".".join(str(b) for b in raw)


_TEXT = {"uuid": uuid_text, "inet6": inet6_text, "inet4": inet4_text}


def binlog_to_text(type_name: str, value: Any) -> str | None:
    """A binlog value of a ``uuid`` / ``inet6`` / ``inet4`` column (bytes, maybe trimmed) → its text."""
    if value is None:
        return None
    return _TEXT[type_name](_raw(type_name, value))


def _uuid_record(memory: bytes) -> bytes:
    """MariaDB's in-record (index) form of a UUID given in memory order (``UUID<false>``)."""
    version_byte, variant_byte = memory[6], memory[8]
    if 0 < version_byte < 0x60 and variant_byte & 0x80:  # version 1-5, variant 1 (``mem_need_swap``)
        return memory[10:16] + memory[8:10] + memory[6:8] + memory[4:6] + memory[0:4]
    return memory


def text_to_bytes(type_name: str, text: str) -> bytes:
    """The canonical text (as the server or :func:`binlog_to_text` gives it) → the value's bytes."""
    try:
        if type_name == "uuid":
            raw = bytes.fromhex(text.replace("-", ""))
            if len(raw) != UUID_LENGTH:
                raise ValueError("not 16 bytes")
            return raw
        if type_name == "inet6":
            return ipaddress.IPv6Address(text).packed
        return ipaddress.IPv4Address(text).packed
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a {type_name.upper()} value") from exc


def sort_key(type_name: str, text: str) -> bytes:
    """Bytes that sort as MariaDB orders the column's values (for chunk-key comparisons)."""
    raw = text_to_bytes(type_name, text)
    return _uuid_record(raw) if type_name == "uuid" else raw
