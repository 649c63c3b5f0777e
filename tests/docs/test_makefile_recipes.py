"""Every recipe line of the README's two commands is valid shell: ``make demo``'s closing lines once
ended an ``echo`` with ``\\"``, which made the shell's string run on and the demo stop with ``unexpected
EOF`` after its work was done. ``make -n`` prints each target's commands as make would run them
(setup's included), and ``bash -n`` parses them without running any."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("target", ["demo", "test", "setup", "lint", "bench"])
def test_recipe_is_valid_shell(target):
    assert shutil.which("make"), "GNU make is needed to read the Makefile"
    dry = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, check=True)
    assert dry.stdout.strip(), f"make -n {target} printed no command"
    parsed = subprocess.run(["bash", "-n"], input=dry.stdout, capture_output=True, text=True)
    assert parsed.returncode == 0, f"make {target}'s commands are not valid shell:\n{parsed.stderr}"
