"""Helpers for the Spark job tests: a pipeline over the fixture servers, and Doris reads."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from cdc_core.config import parse_pipeline
from devstack.pipeline_file import pipeline_yaml


def make_pipeline(mysql_server, doris_standin, state_dir: Path, tables: str, *, source: dict | None = None,
                  sink: dict | None = None, pipeline: dict | None = None, transform: list | None = None,
                  route: list | None = None, parallelism: int = 2):
    """A pipeline file's content over the fixture servers, parsed as a user's file would be.

    These tests are about the Spark jobs: small runs go through Spark too (the in-process path of
    small runs has its own tests in test_snapshot_job.py).
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    text = pipeline_yaml(host="127.0.0.1", port=mysql_server.endpoint.port, fe=doris_standin.fe_http, tables=tables,
                         name=f"test_{state_dir.name}", state_dir=state_dir, source=source, sink=sink,
                         pipeline={"tidemark.snapshot.in-process-rows": 0, **(pipeline or {})},
                         transform=transform, route=route, parallelism=parallelism)
    return parse_pipeline(text, state_dir / "pipeline.yaml", env={})


def doris_query(standin, database: str, sql: str) -> list[list]:
    resp = requests.post(
        f"http://{standin.fe_http}/api/query/default_cluster/{database}", json={"stmt": sql},
        auth=("root", ""), timeout=60,
    )
    body = resp.json()
    assert body.get("code") == 0, f"Doris query failed: {body}"
    return body["data"].get("data", [])


def doris_load_state(standin, database: str, label: str) -> str:
    resp = requests.get(f"http://{standin.fe_http}/api/{database}/get_load_state", params={"label": label},
                        auth=("root", ""), timeout=30)
    return resp.json()["data"]


@pytest.fixture
def pipeline_factory(mysql_server, doris_standin, tmp_path):
    counter = iter(range(1000))

    def factory(tables: str, **kwargs):
        state = tmp_path / f"state{next(counter)}"
        return make_pipeline(mysql_server, doris_standin, state, tables, **kwargs)

    return factory
