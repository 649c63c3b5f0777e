"""The purged-binlog option and message, and the repair named by a failing table_parity check (issue 28)."""

from __future__ import annotations

import pytest

from cdc_core.config.pipeline_options import PipelineOptions
from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.purge import BinlogPurgedError
from cdc_core.pipeline.results import ParityResult
from orchestration.defs.checks import parity_result


def test_on_purged_defaults_to_fail_and_takes_resnapshot():
    assert PipelineOptions.model_validate({"name": "p"}).binlog_on_purged == "fail"
    options = PipelineOptions.model_validate({"name": "p", "tidemark.binlog.on-purged": "RESNAPSHOT"})
    assert options.binlog_on_purged == "resnapshot"
    with pytest.raises(ValueError, match="on-purged"):
        PipelineOptions.model_validate({"name": "p", "tidemark.binlog.on-purged": "skip"})


def test_the_purged_binlog_message_names_the_command_and_the_option():
    message = str(BinlogPurgedError(BinlogOffset("binlog.000003", 4), ["binlog.000007", "binlog.000008"]))
    assert "binlog.000003" in message and "binlog.000007" in message
    assert "tidemark resnapshot PIPELINE.yaml" in message and "tidemark.binlog.on-purged: resnapshot" in message


@pytest.mark.parametrize("authoritative", [True, False])
def test_a_failing_parity_result_offers_the_remedy(authoritative):
    bad = ParityResult("db.t", None, 3, 2, "", "differs", {})
    result = parity_result([bad], authoritative, "1 table(s)", remedy=". launch shop_repair_job")
    assert not result.passed and result.description.endswith(". launch shop_repair_job")
