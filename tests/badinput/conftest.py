"""The bad-input tests reuse the job tests' pipeline factory (a pipeline over the fixture servers)."""

from tests.jobs.conftest import pipeline_factory  # noqa: F401 - a fixture re-exported for this package
