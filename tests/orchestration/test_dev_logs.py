"""``tidemark dev`` is quiet by default: Dagster's INFO lines (every sensor tick) go only to the log
files, warnings and errors also reach the terminal without their tracebacks (issue 29, item 2: a
failed sensor run printed two stack traces); ``-v`` shows all."""

from __future__ import annotations

import io
import logging
import os

from orchestration.cli.dev_logs import LevelFilter, LogRelay, line_level
from orchestration.cli.tidemark import build_parser

# As dagster-daemon prints them (captured from a run; colored format, ANSI codes and all).
ESC = "\x1b"
DAEMON = [
    f"{ESC}[32m2026-11-23 15:19:33 +0000{ESC}[0m - dagster - {ESC}[34mWARNING{ESC}[0m - /x/sensor_definition.py:809: "
    "BetaWarning: Parameter `owners` of initializer `SensorDefinition.__init__` is currently in beta\n",
    "  return SensorDefinition(\n",
    "\n",
    f"{ESC}[32m2026-11-23 15:19:33 +0000{ESC}[0m - dagster.daemon - {ESC}[34mINFO{ESC}[0m - Instance is configured "
    "with the following daemons: ['AssetDaemon', 'SensorDaemon']\n",
    f"{ESC}[32m2026-11-23 15:19:38 +0000{ESC}[0m - dagster.daemon.SensorDaemon - {ESC}[34mINFO{ESC}[0m - Checking for "
    "new runs for sensor: shop_binlog_sensor\n",
    f"{ESC}[32m2026-11-23 15:19:38 +0000{ESC}[0m - dagster.daemon.SensorDaemon - {ESC}[34mINFO{ESC}[0m - Sensor "
    "shop_binlog_sensor skipped: the snapshot of 'shop' is not finished\n",
    f"{ESC}[32m2026-11-23 15:19:43 +0000{ESC}[0m - dagster.daemon.SensorDaemon - {ESC}[31mERROR{ESC}[0m - Sensor "
    "shop_binlog_sensor: Error occurred during the execution of evaluation_fn\n",
    "Traceback (most recent call last):\n",
    '  File "/x/sensors.py", line 40, in binlog_sensor\n',
    "ConnectionError: cannot connect to MySQL as cdc@127.0.0.1:3307\n",
    f"{ESC}[32m2026-11-23 15:19:48 +0000{ESC}[0m - dagster.daemon.SensorDaemon - {ESC}[34mINFO{ESC}[0m - Checking for "
    "new runs for sensor: shop_ddl_sensor\n",
]


def test_line_levels_of_dagster_and_uvicorn_output():
    assert line_level(DAEMON[0]) == logging.WARNING
    assert line_level(DAEMON[4]) == logging.INFO
    assert line_level(DAEMON[6]) == logging.ERROR
    assert line_level("2026-11-23 15:19:43 +0000 - dagster-webserver - CRITICAL - boom\n") == logging.CRITICAL
    assert line_level("WARNING:  Invalid HTTP request received.\n") == logging.WARNING
    assert line_level("INFO:     Uvicorn running on http://127.0.0.1:3000\n") == logging.INFO
    assert line_level("Traceback (most recent call last):\n") is None


def test_the_terminal_gets_warnings_and_errors_without_their_tracebacks():
    shown = _filtered(LevelFilter(), DAEMON)
    assert shown == [DAEMON[0], DAEMON[6], DAEMON[9]]  # the exception's line stays: it is the cause
    assert not any("Checking for new runs" in line or "skipped" in line for line in shown)


# A failed run's step, as a run worker under `tidemark dev` printed it before its console logger
# was one line per record (orchestration/defs/console_logger.py): still no stack trace shown.
STEP_FAILURE = [
    "2026-11-23 15:20:01 +0000 - dagster - ERROR - shop_binlog_job - 1f2e - 77 - shop__binlog_stream - STEP_FAILURE"
    ' - Execution of step "shop__binlog_stream" failed.\n',
    "\n",
    "dagster._core.errors.DagsterExecutionStepExecutionError: Error occurred while executing op \"x\":\n",
    "\n",
    "Stack Trace:\n",
    '  File "/x/dagster/_core/execution/plan/utils.py", line 56, in op_execution_error_boundary\n',
    "    yield\n",
    "\n",
    "The above exception was caused by the following exception:\n",
    "ConnectionError: the Doris FE at 127.0.0.1:8030 does not answer\n",
    "\n",
    "Stack Trace:\n",
    '  File "/x/orchestration/defs/assets.py", line 300, in binlog_stream\n',
]


def test_a_failed_steps_stack_trace_is_not_shown_but_its_exceptions_are():
    shown = _filtered(LevelFilter(), STEP_FAILURE)
    assert shown == [STEP_FAILURE[0], STEP_FAILURE[2], STEP_FAILURE[9]]
    assert _filtered(LevelFilter(logging.NOTSET), STEP_FAILURE) == STEP_FAILURE


def test_output_that_never_states_a_level_is_shown():
    assert _filtered(LevelFilter(), ["Serving dagster-webserver on http://127.0.0.1:3000\n"]) == \
        ["Serving dagster-webserver on http://127.0.0.1:3000\n"]


def test_verbose_shows_everything():
    assert _filtered(LevelFilter(logging.NOTSET), DAEMON) == DAEMON


def _filtered(level_filter: LevelFilter, lines: list[str]) -> list[str]:
    return [line for line in lines if level_filter.show(line)]


def test_the_relay_writes_every_line_to_the_file_and_the_filtered_ones_to_the_terminal(tmp_path):
    read, write = os.pipe()
    with os.fdopen(write, "wb") as out:
        out.write("".join(DAEMON).encode())
    terminal = io.StringIO()
    relay = LogRelay("daemon", os.fdopen(read, "rb"), tmp_path / "logs" / "daemon.log", terminal)
    relay.start()
    relay.join(30)
    assert not relay.is_alive()
    assert (tmp_path / "logs" / "daemon.log").read_text() == "".join(DAEMON)
    pointer = f"  (the rest is in {tmp_path / 'logs' / 'daemon.log'})\n"
    assert terminal.getvalue() == "".join([DAEMON[0], pointer, DAEMON[6], pointer, DAEMON[9]])


def test_dev_takes_verbose():
    args = build_parser().parse_args(["dev", "p.yaml"])
    assert (args.pipelines, args.verbose, args.port) == (["p.yaml"], False, 3000)
    assert build_parser().parse_args(["dev", "p.yaml", "-v"]).verbose
    assert build_parser().parse_args(["dev", "--verbose", "a.yaml", "b.yaml"]).pipelines == ["a.yaml", "b.yaml"]


def test_dev_help_names_the_log_folder_dev_uses(capsys):
    """Issue 29, item 10: `dev --help` named DAGSTER_HOME/logs; the logs are in <instance>/dev_logs."""
    import pytest

    from orchestration.cli.dev import DEV_LOG_DIR

    with pytest.raises(SystemExit):
        build_parser().parse_args(["dev", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"<instance>/{DEV_LOG_DIR}/daemon.log and webserver.log" in text, text
    assert "<tidemark.state.dir>/dagster or $TIDEMARK_DAGSTER_HOME" in text and "/logs " not in text
