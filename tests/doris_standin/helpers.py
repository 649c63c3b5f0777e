"""Shared by the conformance tests: the response's keys, the label-exists message, a users table, JSON lines."""

from __future__ import annotations

import json
import re

from .conftest import StandInProcess

RESPONSE_KEYS = [
    "TxnId", "Label", "Comment", "TwoPhaseCommit", "Status", "Message", "NumberTotalRows", "NumberLoadedRows",
    "NumberFilteredRows", "NumberUnselectedRows", "LoadBytes", "LoadTimeMs", "BeginTxnTimeMs",
    "StreamLoadPutTimeMs", "ReadDataTimeMs", "WriteDataTimeMs", "CommitAndPublishTimeMs",
]
LABEL_EXISTS = re.compile(r"Label \[(.*)\] has already been used, relate to txn \[(\d+)\]")
JSONL = {"format": "json", "read_json_by_line": "true"}


def make_users(doris: StandInProcess, db: str, extra_props: str = "", extra_cols: str = "") -> None:
    doris.ok(
        f"CREATE TABLE IF NOT EXISTS `{db}`.`users` (\n"
        "  `id` BIGINT NOT NULL COMMENT 'primary key',\n"
        "  `name` VARCHAR(20) COMMENT 'who',\n"
        f"  `amount` DECIMALV3(10, 2) COMMENT 'money'{extra_cols}\n"
        ") UNIQUE KEY(`id`) COMMENT 'users table' DISTRIBUTED BY HASH(`id`) BUCKETS AUTO\n"
        f"PROPERTIES ('replication_num' = '1', 'light_schema_change' = 'true'{extra_props})"
    )


def jsonl(*rows: dict) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"
