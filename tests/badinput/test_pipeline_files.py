"""Invalid pipeline files: each mistake exits 2 with a line naming the file, the key, the key's line
and the fix, from ``tidemark validate``, ``tidemark run`` and ``tidemark status`` alike."""

from __future__ import annotations

import pytest

from orchestration.cli.tidemark import main

GOOD = """\
source:
  type: mysql
  hostname: 127.0.0.1
  port: 3306
  username: cdc
  password: secret-pw
  tables: shop.orders
sink:
  type: doris
  fenodes: 127.0.0.1:8030
  username: root
pipeline:
  parallelism: 2
"""

CASES = {
    "yaml_syntax": (("  port: 3306\n", "  port: [3306\n"), ["not valid YAML", "line "]),
    "unknown_key": (("  username: root\n", "  username: root\n  sink.bogus: 1\n"),
                    ["sink.sink.bogus: unknown option (remove it; docs/configuration.md lists the options Tidemark reads) (line 12)"]),
    "misspelt_key": (("  port: 3306\n", "  port: 3306\n  scan.incremental.snapshot.chunk.sise: 10\n"),
                     ["source.scan.incremental.snapshot.chunk.sise: unknown option (did you mean "
                      "'scan.incremental.snapshot.chunk.size'?) (line 5)"]),
    "wrong_type": (("  parallelism: 2\n", "  parallelism: two\n"),
                   ["pipeline.parallelism: expected an integer, got 'two' (line 13)"]),
    "missing_key": (("  hostname: 127.0.0.1\n", ""),
                    ["source.hostname: missing required option (add 'hostname: ...' under 'source:')"]),
    "bad_regex": (("  tables: shop.orders\n", "  tables: shop.(orders\n"),
                  ["source.tables: bad regex in table pattern 'shop.(orders'", "(line 7)"]),
    "unknown_option": (("  parallelism: 2\n", "  parallelism: 2\n  tidemark.state.dirr: /tmp/x\n"),
                       ["pipeline.tidemark.state.dirr: unknown Tidemark option (did you mean 'tidemark.state.dir'?) "
                        "(line 14)"]),
    "unknown_block": (("pipeline:\n", "pipelines:\n"), ["pipelines: unknown block (did you mean 'pipeline'?) (line 12)"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_invalid_file_exits_2_naming_file_key_line_and_fix(case, tmp_path, capsys):
    (old, new), expected = CASES[case]
    assert old in GOOD
    path = tmp_path / f"{case}.yaml"
    path.write_text(GOOD.replace(old, new, 1))
    for argv in (["validate", str(path)], ["status", str(path)], ["run", str(path), "--once"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"{path}: ") or f"{path}: " in err, err
        for text in expected:
            assert text in err, (argv, err)
        assert "secret-pw" not in err


def test_validate_lists_every_problem_of_a_file_on_its_own_line(tmp_path, capsys):
    path = tmp_path / "many.yaml"
    path.write_text(GOOD.replace("  port: 3306\n", "  port: x\n").replace("  username: cdc\n", ""))
    assert main(["validate", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"{path}: source.port: expected an integer, got 'x' (line 4)",
                     f"{path}: source.username: missing required option (add 'username: ...' under 'source:')"]


def test_validate_reports_every_blocks_problems(tmp_path, capsys):
    """Issue 29, item 7: a typo in ``source`` does not hide one in ``sink`` or ``pipeline``."""
    path = tmp_path / "blocks.yaml"
    path.write_text(GOOD.replace("  port: 3306\n", "  prot: 3306\n")
                    .replace("  fenodes: 127.0.0.1:8030\n", "  fenode: 127.0.0.1:8030\n")
                    .replace("  parallelism: 2\n", "  parallelism: two\n"))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    for text in ("source.prot: unknown option (did you mean 'port'?) (line 4)",
                 "sink.fenode: unknown option (did you mean 'fenodes'?) (line 10)",
                 "pipeline.parallelism: expected an integer, got 'two' (line 13)"):
        assert f"{path}: {text}" in err.splitlines(), err
    assert "secret-pw" not in err


def test_an_unknown_block_does_not_hide_the_other_blocks_problems(tmp_path, capsys):
    path = tmp_path / "unknown_block.yaml"
    path.write_text(GOOD.replace("pipeline:\n", "pipelines:\n").replace("  username: root\n", "  usernam: root\n"))
    assert main(["validate", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert f"{path}: pipelines: unknown block (did you mean 'pipeline'?) (line 12)" in lines, lines
    assert f"{path}: sink.usernam: unknown option (did you mean 'username'?) (line 11)" in lines, lines


def test_a_missing_file_exits_2_with_the_path(tmp_path, capsys):
    """Issue 29, item 10: `splits` (and `verify`) exit 2 as well (`splits` exited 1)."""
    path = tmp_path / "nope.yaml"
    for argv in (["validate", str(path)], ["status", str(path)], ["run", str(path), "--once"], ["splits", str(path)],
                 ["verify", str(path)]):
        assert main(argv) == 2
        assert f"{path}: no such pipeline file (check the path" in capsys.readouterr().err
