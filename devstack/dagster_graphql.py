"""The few Dagster GraphQL calls the end-to-end tests and the benchmarks make against a running
``dagster-webserver``: launch a job, backfill an asset's partitions, and poll both.
(``DagsterGraphQLClient`` has no backfill call.) A test and bench helper: production never
imports it, and it imports nothing of Tidemark's."""

from __future__ import annotations

import time
from typing import Any

import requests

REPOSITORY = "__repository__"

TERMINAL_RUN = {"SUCCESS", "FAILURE", "CANCELED"}
TERMINAL_BACKFILL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}


class DagsterApi:
    def __init__(self, url: str, location: str | None = None, timeout_s: float = 30.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._location = location

    @property
    def location(self) -> str:
        """The code location's name (the only one, unless given)."""
        if self._location is None:
            data = self.query("{ workspaceOrError { ... on Workspace { locationEntries { name } } } }")
            names = [e["name"] for e in data["workspaceOrError"]["locationEntries"]]
            if len(names) != 1:
                raise RuntimeError(f"expected one code location, found {names}; name it explicitly")
            self._location = names[0]
        return self._location

    def query(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        response = requests.post(f"{self.url}/graphql", json={"query": query, "variables": variables or {}},
                                 timeout=self.timeout_s)
        response.raise_for_status()
        body = response.json()
        if body.get("errors"):
            raise RuntimeError(f"GraphQL error: {body['errors']}")
        return body["data"]

    def launch_job(self, job_name: str, tags: dict[str, str] | None = None) -> str:
        data = self.query(
            """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
                 __typename ... on LaunchRunSuccess { run { runId } }
                 ... on PythonError { message } ... on InvalidSubsetError { message }
                 ... on RunConfigValidationInvalid { errors { message } } } }""",
            {"p": {"selector": {"repositoryLocationName": self.location, "repositoryName": REPOSITORY,
                                "jobName": job_name},
                   "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in (tags or {}).items()]}}},
        )["launchRun"]
        if data["__typename"] != "LaunchRunSuccess":
            raise RuntimeError(f"launching {job_name} failed: {data}")
        return data["run"]["runId"]

    def backfill_all_partitions(self, asset_path: list[str], title: str | None = None) -> str:
        data = self.query(
            """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
                 __typename ... on LaunchBackfillSuccess { backfillId }
                 ... on PythonError { message } ... on PartitionSetNotFoundError { message }
                 ... on InvalidStepError { invalidStepKey } ... on InvalidOutputError { invalidOutputName } } }""",
            {"p": {"assetSelection": [{"path": asset_path}], "allPartitions": True,
                   **({"title": title} if title else {})}},
        )["launchPartitionBackfill"]
        if data["__typename"] != "LaunchBackfillSuccess":
            raise RuntimeError(f"launching the backfill of {'/'.join(asset_path)} failed: {data}")
        return data["backfillId"]

    def run_status(self, run_id: str) -> str:
        data = self.query("query($id: ID!) { runOrError(runId: $id) { __typename ... on Run { status } } }",
                          {"id": run_id})["runOrError"]
        return data.get("status", data["__typename"])

    def backfill_status(self, backfill_id: str) -> str:
        data = self.query(
            "query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename "
            "... on PartitionBackfill { status } ... on PythonError { message } } }", {"id": backfill_id},
        )["partitionBackfillOrError"]
        return data.get("status", data["__typename"])

    def backfill_timeline(self, backfill_id: str) -> dict[str, Any]:
        """The backfill's creation and end, and each of its runs' creation, start and end (epoch seconds)."""
        data = self.query(
            "query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename "
            "... on PartitionBackfill { creationTime endTimestamp runs(limit: 1000) { runId status creationTime "
            "startTime endTime stepStats { stepKey startTime endTime } } } ... on PythonError { message } } }",
            {"id": backfill_id},
        )["partitionBackfillOrError"]
        if data["__typename"] != "PartitionBackfill":
            raise RuntimeError(f"backfill {backfill_id}: {data}")
        return data

    def wait_run(self, run_id: str, timeout_s: float = 300.0) -> str:
        return _wait(lambda: self.run_status(run_id), TERMINAL_RUN, timeout_s, f"run {run_id}")

    def wait_backfill(self, backfill_id: str, timeout_s: float = 600.0) -> str:
        return _wait(lambda: self.backfill_status(backfill_id), TERMINAL_BACKFILL, timeout_s, f"backfill {backfill_id}")


def _wait(poll: Any, terminal: set[str], timeout_s: float, what: str) -> str:
    deadline = time.monotonic() + timeout_s
    status = "?"
    while time.monotonic() < deadline:
        status = poll()
        if status in terminal:
            return status
        time.sleep(0.5)
    raise TimeoutError(f"{what} still {status} after {timeout_s:.0f} s")
