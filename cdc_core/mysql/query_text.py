"""A binlog QueryEvent's statement, decoded in the charset its client sent it in.

The server logs a statement (a DDL, or DML under ``binlog_format=STATEMENT``) as the client sent it,
in the session's ``character_set_client``, which the event carries (``Q_CHARSET_CODE``).
mysql-replication decodes it as UTF-8 whatever that was, escaping bytes that are no UTF-8: an
``ENUM('é')`` or a ``COMMENT '€'`` sent by a latin1 session would reach the schema history as
``'\\xe9'``, and latin1 bytes that happen to be UTF-8 would read as other text. :func:`statement`
takes the event's own bytes back from the packet (the query is the last thing the event holds)
and decodes them with :mod:`cdc_core.mysql.types.charsets`, exactly or not at all.
"""

from __future__ import annotations

import re
from typing import Any

from pymysqlreplication.constants import CHARSET

from cdc_core.mysql.types.charsets import UndecodableTextError, decoder_for, is_utf8

_REPLACED = re.compile(r"\\x[89a-f][0-9a-f]")  # what backslashreplace makes of a byte that is no UTF-8


def statement(ev: Any) -> str:
    """The QueryEvent's statement as its client wrote it."""
    text = ev.query
    if not isinstance(text, str):  # not mysql-replication's decoding: the bytes themselves
        return _client_decoder(ev)(bytes(text))
    if text.isascii() and not _REPLACED.search(text):
        return text  # ASCII bytes: the same text in every client charset (all are ASCII-compatible)
    client = _client_charset(ev)
    if client is not None and is_utf8(client) and not _REPLACED.search(text):
        return text  # the library decoded valid UTF-8: exact
    return _client_decoder(ev)(_raw_query(ev, text))


def _client_charset(ev: Any) -> str | None:
    charset_id = getattr(ev, "character_set_client", None)
    if charset_id is None:
        return None
    found = CHARSET.charset_by_id(charset_id, getattr(ev, "dbms", None) or "mysql")
    return None if found is None else found.name


def _client_decoder(ev: Any) -> Any:
    client = _client_charset(ev)
    if client is None:
        at, charset_id = getattr(ev.packet, "log_pos", "?"), getattr(ev, "character_set_client", None)
        raise UndecodableTextError(
            f"a statement in the binlog (at {at}) holds non-ASCII text and its client charset (id {charset_id}) "
            "is unknown, so it cannot be read exactly; nothing was guessed")
    return decoder_for(client)


def _raw_query(ev: Any, text: str) -> bytes:
    """The query's bytes, the last ``n`` bytes the event's packet read; ``n`` is found by asking which
    length decodes (as mysql-replication decoded it) to ``text``: with every ``\\xNN`` a replaced byte,
    or none."""
    packet = ev.packet.packet  # pymysql's MysqlPacket under mysql-replication's wrapper
    data, end = packet.get_all_data(), packet._position
    utf8_length = len(text.encode("utf-8"))
    for size in (utf8_length - 3 * len(_REPLACED.findall(text)), utf8_length):
        raw = bytes(data[max(0, end - size):end])
        # compared with the library's own decoding only: the bytes are then decoded exactly
        if len(raw) == size and raw.decode("utf-8", errors="backslashreplace") == text:
            return raw
    raise UndecodableTextError(
        f"the statement at binlog offset {getattr(ev.packet, 'log_pos', '?')} could not be read back as the "
        "bytes its client sent; nothing was guessed")
