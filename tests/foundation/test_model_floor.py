"""The model stays on its own floor: the import-linter contract names every other part of cdc_core.

``lint-imports`` enforces the contract "cdc_core.model is the floor" (pyproject.toml), but a
forbidden contract only forbids what it lists: a package added to cdc_core later would slip past
it. This test fails until the new package is listed, and reads the model's own imports too.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CDC_CORE = ROOT / "cdc_core"


def _floor_contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = [c for c in config["tool"]["importlinter"]["contracts"] if c["source_modules"] == ["cdc_core.model"]]
    assert len(contracts) == 1, "pyproject.toml has one import-linter contract for cdc_core.model"
    return contracts[0]


def test_the_contract_forbids_every_other_part_of_cdc_core():
    siblings = {f"cdc_core.{p.stem}" for p in CDC_CORE.iterdir()
                if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.stem != "__init__")}
    siblings.discard("cdc_core.model")
    forbidden = set(_floor_contract()["forbidden_modules"])
    assert siblings - forbidden == set(), "add these to the cdc_core.model contract's forbidden_modules"
    assert {"jobs", "orchestration", "devstack", "dagster", "pyspark"} <= forbidden


def test_the_model_imports_only_itself_of_ours():
    ours = ("cdc_core", "jobs", "orchestration", "devstack")
    for path in sorted((CDC_CORE / "model").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            for name in names:
                if name.split(".")[0] in ours:
                    assert name == "cdc_core.model" or name.startswith("cdc_core.model."), f"{path.name} imports {name}"
