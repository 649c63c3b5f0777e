"""The soak (issue 28 item 5), as a ``slow`` test: ``TIDEMARK_SOAK_MINUTES`` (default 30) of mixed
writes at 2,000 rows/s over 20 tables under ``tidemark dev``, every kind of fault at seeded random
moments (``TIDEMARK_SOAK_SEED``, default: the time; printed, so a run can be replayed), Doris equal
to MySQL at every quiet point and at the end. The harness is ``tests/soak/harness.py``; the same
soak with its figures written down is ``python -m tests.soak --minutes N --seed S``.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.soak.__main__ import verdict
from tests.soak.harness import Soak, SoakConfig
from tests.soak.schedule import FAULTS


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(0)
def test_soak_under_faults_leaves_doris_equal_to_mysql(tmp_path):
    minutes = float(os.environ.get("TIDEMARK_SOAK_MINUTES", "30"))
    seed = int(os.environ.get("TIDEMARK_SOAK_SEED", str(int(time.time()))))
    print(f"soak: {minutes:g} minutes, seed {seed} (TIDEMARK_SOAK_SEED={seed} replays it); output in {tmp_path}",
          flush=True)
    fig = Soak(SoakConfig(minutes, seed, tmp_path / "soak")).run()
    print(json.dumps({k: v for k, v in fig.items() if k not in ("events", "quiet_points")}, indent=1, default=str))
    assert fig["writing_s"] >= minutes * 60
    assert all(fig["faults"].get(e.value) for e in FAULTS), fig["faults"]
    assert fig["quiet_points_checked"] >= 2
    assert fig["differences"] == 0, [q for q in fig["quiet_points"] if q["differences"]]
    assert verdict(fig) == []
