"""The two ways a DDL fails to parse: inside the grammar, and as the parser's verdict."""

from __future__ import annotations


class DdlParseError(ValueError):
    """A DDL on a captured table could not be understood; the stream must stop here."""

    def __init__(self, message: str, ddl: str):
        self.ddl = ddl
        super().__init__(f"{message}\n  DDL: {ddl.strip()}")


class DdlSyntaxError(Exception):
    """Raised inside the grammar; the parser turns it into a :class:`DdlParseError` only when the
    statement touches a captured table (DDL on other tables that we cannot read is ignored)."""
