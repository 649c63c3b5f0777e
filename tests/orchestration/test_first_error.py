"""``tidemark run``'s one-line account of a failed step keeps the whole message: a stop whose message
spans lines (a DDL error appends ``DDL: <statement>`` on its own line) still names the table and the way
out (corpus ``mt_ctype_create_b.t1__6``: only the ``DDL:`` line was printed, so no way out was named)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from dagster._utils.error import serializable_error_info_from_exc_info

from cdc_core.mysql.ddl.errors import DdlParseError
from orchestration.cli.run_once import _first_error


def _failed_step(exc: BaseException) -> SimpleNamespace:
    try:
        try:
            raise exc
        except Exception as inner:
            raise RuntimeError('Error occurred while executing op "apply_schema_change":') from inner
    except RuntimeError:
        error = serializable_error_info_from_exc_info(sys.exc_info())
    failure = SimpleNamespace(user_failure_data=None, error=error)
    return SimpleNamespace(all_events=[SimpleNamespace(is_step_failure=True, step_failure_data=failure,
                                                       step_key="apply_schema_change")])


def test_a_multi_line_stop_is_printed_whole_on_one_line():
    stop = DdlParseError("ALTER TABLE db.t1 CONVERT TO CHARACTER SET DEFAULT converts its columns to the "
                         "database's default. The way out: leave db.t1 out of the pipeline (source "
                         "tables.exclude: db.t1) and run again",
                         "ALTER TABLE t1\n  CONVERT TO CHARACTER SET DEFAULT, CHARACTER SET utf8")
    line = _first_error(_failed_step(stop))
    assert "\n" not in line
    assert line.startswith("apply_schema_change: ")
    assert "tables.exclude: db.t1" in line and "leave db.t1 out of the pipeline" in line
    assert line.endswith("DDL: ALTER TABLE t1 CONVERT TO CHARACTER SET DEFAULT, CHARACTER SET utf8")
