"""``tidemark dev``'s daemon: Dagster's CLI with the backfill daemon's interval shortened."""

from __future__ import annotations

import sys

import pytest
from dagster._daemon import controller

from orchestration.cli import dagster_daemon


def test_this_dagsters_backfill_loop_still_reads_the_interval_we_shorten():
    # If Dagster moves the constant or stops reading it per iteration, UI backfills start at
    # Dagster's 30 s again: this fails first, and orchestration/cli/dagster_daemon.py needs a look.
    assert dagster_daemon.backfill_loop_reads_the_interval()


def test_shortening_sets_the_interval_the_backfill_loop_reads(monkeypatch):
    monkeypatch.setattr(controller, "DEFAULT_DAEMON_INTERVAL_SECONDS", 30)
    assert dagster_daemon.shorten_backfill_interval(2.0)
    assert controller.DEFAULT_DAEMON_INTERVAL_SECONDS == 2.0


def test_the_wrapper_is_dagsters_daemon_cli(monkeypatch, capsys):
    monkeypatch.setattr(controller, "DEFAULT_DAEMON_INTERVAL_SECONDS", 30)
    monkeypatch.setattr(sys, "argv", ["orchestration.cli.dagster_daemon", "--help"])
    monkeypatch.setenv(dagster_daemon.INTERVAL_ENV, "3")
    with pytest.raises(SystemExit) as done:
        dagster_daemon.main()
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "run" in out and "dagster-daemon" in out
    assert controller.DEFAULT_DAEMON_INTERVAL_SECONDS == 3.0
