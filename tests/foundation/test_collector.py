"""The garbage collector's set-up in Tidemark's long-lived processes (cdc_core/instrumentation/collector.py)."""

from __future__ import annotations

import gc

from cdc_core.instrumentation.collector import GEN0_THRESHOLD, freeze_start_up


def test_what_start_up_made_leaves_the_collectors_sight_and_cycles_made_after_are_still_collected():
    threshold = gc.get_threshold()
    try:
        freeze_start_up()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (max(GEN0_THRESHOLD, threshold[0]), *threshold[1:])

        class Node:
            pass

        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle made after start-up
        alive = len([o for o in gc.get_objects() if isinstance(o, Node)])
        del a, b
        gc.collect()
        assert alive == 2 and not [o for o in gc.get_objects() if isinstance(o, Node)]
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_the_tidemark_command_makes_young_collections_rarer_before_its_imports(monkeypatch):
    import sys

    import pytest

    import orchestration.cli.tidemark as command

    threshold = gc.get_threshold()
    seen: list[int] = []
    monkeypatch.setattr(command, "main", lambda argv: seen.append(gc.get_threshold()[0]) or 0)
    monkeypatch.setattr(sys, "argv", ["tidemark", "validate", "pipelines/demo.yaml"])
    try:
        gc.set_threshold(700, *threshold[1:])
        with pytest.raises(SystemExit) as ended:
            command.cli()
    finally:
        gc.set_threshold(*threshold)
    assert ended.value.code == 0 and seen == [GEN0_THRESHOLD]
