"""Helpers for the Spark job tests: a pipeline over the fixture servers, and Doris reads."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
import yaml

from cdc_core.config import parse_pipeline


def make_pipeline(mysql_server, doris_standin, state_dir: Path, tables: str, *, source: dict | None = None,
                  sink: dict | None = None, pipeline: dict | None = None, transform: list | None = None,
                  route: list | None = None, parallelism: int = 2):
    """A pipeline file's content over the fixture servers, parsed as a user's file would be."""
    document = {
        "source": {"type": "mysql", "hostname": "127.0.0.1", "port": mysql_server.endpoint.port,
                   "username": "cdc", "password": "cdc", "tables": tables, "server-id": "5500-5520",
                   "server-time-zone": "UTC", **(source or {})},
        "sink": {"type": "doris", "fenodes": doris_standin.fe_http, "username": "root", "password": "",
                 **(sink or {})},
        "pipeline": {"name": f"test_{state_dir.name}", "parallelism": parallelism,
                     "tidemark.state.dir": str(state_dir), **(pipeline or {})},
    }
    if transform:
        document["transform"] = transform
    if route:
        document["route"] = route
    state_dir.mkdir(parents=True, exist_ok=True)
    return parse_pipeline(yaml.safe_dump(document, sort_keys=False), state_dir / "pipeline.yaml", env={})


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
