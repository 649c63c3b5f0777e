"""A stream load's request (the context the BE port hands over) and its reply.

The reply is built field by field in the order of BE ``StreamLoadContext::to_json`` because clients
(and our own tests) compare shapes, and ``TwoPhaseCommit`` is a *string* there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass
class LoadContext:
    db: str
    table: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    be_host: str
    be_port: int
    be_scheme: str = "http"


class LoadResult:
    """Accumulates the fields of the BE reply."""

    def __init__(self, label: str, two_pc: bool) -> None:
        self.txn_id = -1
        self.label = label
        self.comment = ""
        self.two_pc = two_pc
        self.status = "Success"
        self.existing = ""
        self.message = "OK"
        self.total = self.loaded = self.filtered = self.unselected = 0
        self.load_bytes = 0
        self.start = time.monotonic()
        self.begin_ms = self.put_ms = self.read_ms = self.write_ms = self.commit_ms = 0
        self.error_url = ""

    def fail(self, msg: str) -> LoadResult:
        self.status = "Fail"
        self.message = msg
        return self

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "TxnId": self.txn_id,
            "Label": self.label,
            "Comment": self.comment,
            "TwoPhaseCommit": "true" if self.two_pc else "false",
            "Status": self.status,
        }
        if self.status == "Label Already Exists":
            out["ExistingJobStatus"] = self.existing
        out.update({
            "Message": self.message,
            "NumberTotalRows": self.total,
            "NumberLoadedRows": self.loaded,
            "NumberFilteredRows": self.filtered,
            "NumberUnselectedRows": self.unselected,
            "LoadBytes": self.load_bytes,
            "LoadTimeMs": int((time.monotonic() - self.start) * 1000),
            "BeginTxnTimeMs": self.begin_ms,
            "StreamLoadPutTimeMs": self.put_ms,
            "ReadDataTimeMs": self.read_ms,
            "WriteDataTimeMs": self.write_ms,
            "CommitAndPublishTimeMs": self.commit_ms,
        })
        if self.error_url:
            out["ErrorURL"] = self.error_url
        return out


def header_flag(headers: dict[str, str], name: str) -> bool:
    """A ``true``/``false`` header (anything but ``true`` is false, as Doris reads them)."""
    return headers.get(name, "").strip().lower() == "true"


def parse_columns(spec: str) -> list[tuple[str, str | None]]:
    """``k1,k2,tmp,k3=tmp+1`` -> [(k1,None),(k2,None),(tmp,None),(k3,'tmp+1')] (commas inside parens kept)."""
    out: list[tuple[str, str | None]] = []
    depth, cur = 0, []
    parts: list[str] = []
    for ch in spec:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    for p in parts:
        p = p.strip()
        if not p:
            continue
        if "=" in p and not p.startswith("="):
            name, expr = p.split("=", 1)
            out.append((name.strip().strip("`"), expr.strip()))
        else:
            out.append((p.strip("`"), None))
    return out
