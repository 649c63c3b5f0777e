# Tidemark: `make demo` runs the main job on the local stack; `make test` runs the tests
# (`make test-unit` only those that need no server and no Spark); `make lint` checks style and layers.
# Each does its own set-up on a fresh machine (Debian packages, the venv, everything).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.tidemark-installed
APT_PACKAGES := mariadb-server mariadb-client openjdk-17-jre-headless chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: setup system-packages test test-unit demo lint bench clean-stack

setup: system-packages $(STAMP)

# Installs only what is missing, so a second run costs a few dpkg queries.
system-packages:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip 2>&1 | grep -v "is ignored" || true
	$(PY) -m pip install -q -e '.[dev]' 2>&1 | grep -v "is ignored" || true
	$(PY) -c "import pyspark, dagster, pymysqlreplication, connectorx, pyarrow, duckdb, sqlglot" 
	@touch $(STAMP)

# pytest exits 5 when it collects nothing; that is not a failure of the project.
NOTHING_COLLECTED_IS_OK = rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$rc

# Everything in one pytest session (one exit status), in TEST_WORKERS processes (pytest-xdist; most
# tests wait on MariaDB, the stand-in, Dagster or Spark, so two processes overlap those waits even on two
# cores; TEST_WORKERS=0 runs in this one process). Each worker has its own servers (session fixtures),
# ports and temp directories. worksteal hands each worker a contiguous share of the ordered tests
# (tests/conftest.py puts the unit tier first, so its failures still show within a minute) and lets an
# idle worker take tests from the other's tail. The 15 slowest tests close the report, so a CI log
# shows what eats the suite's time budget (under 30 minutes on a slow two-core machine).
TEST_WORKERS ?= 2
test: setup
	@$(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal --durations=15 $(PYTEST_ARGS); $(NOTHING_COLLECTED_IS_OK)

# The fast tier: every test that needs no server (MariaDB, the Doris stand-in, Dagster's webserver or
# daemon) and no Spark, in under a minute. --no-servers fails a test that launches one anyway.
test-unit: setup
	@$(PY) -m pytest -m "not integration and not slow" --no-servers $(PYTEST_ARGS); $(NOTHING_COLLECTED_IS_OK)

# Style (ruff) and the layers between the packages (import-linter, contracts in pyproject.toml).
RUFF ?= $(VENV)/bin/ruff
LINT_IMPORTS ?= $(VENV)/bin/lint-imports
lint: setup
	$(RUFF) check .
	$(LINT_IMPORTS)

# The demo: the local stack, a sample shop database, one pipeline run, a comparison, the UI.
# Ports can be moved: make demo DEMO_MYSQL_PORT=3317 DEMO_DORIS_PORT=8130 DEMO_DORIS_BE_PORT=8140 DAGSTER_PORT=3100
DEMO_MYSQL_PORT ?= 3307
DEMO_DORIS_PORT ?= 8030
DEMO_DORIS_BE_PORT ?= 8040
DAGSTER_HOST ?= 127.0.0.1
DAGSTER_PORT ?= 3000
demo: export TIDEMARK_MYSQL_PORT = $(DEMO_MYSQL_PORT)
demo: export TIDEMARK_DORIS_FE = 127.0.0.1:$(DEMO_DORIS_PORT)
demo: setup
	$(VENV)/bin/tidemark devstack up --mysql-port $(DEMO_MYSQL_PORT) --doris-port $(DEMO_DORIS_PORT) --doris-be-port $(DEMO_DORIS_BE_PORT)
	$(VENV)/bin/tidemark demo load
	$(VENV)/bin/tidemark run pipelines/demo.yaml --once
	$(VENV)/bin/tidemark demo compare
	@echo
	@echo "Next: the Dagster UI. The binlog sensor is running: change rows in MySQL, e.g."
	@echo "  mariadb -uroot --socket=.tidemark/devstack/mysql/mariadb.sock tidemark_demo \\"
	@echo "    -e \"UPDATE customers SET balance = balance + 10 WHERE id <= 100\""
	@echo "and watch binlog_stream materialize. Look at the rows in Doris (the stand-in answers only HTTP):"
	@echo "  .venv/bin/tidemark sql pipelines/demo.yaml \\"
	@echo "    \"SELECT COUNT(*) AS customers, SUM(balance) AS balance FROM tidemark_demo.customers\""
	@echo "Ctrl-C stops the UI; 'make clean-stack' stops MariaDB and Doris."
	$(VENV)/bin/tidemark dev pipelines/demo.yaml --host $(DAGSTER_HOST) --port $(DAGSTER_PORT)

# The benchmarks on one local stack, each figure beside its limit and the peers (bench/run_all.py):
# ~10-15 min on a quiet 2-core machine; writes bench/results/<date>-<sha>.{json,md,png} and bench/RESULTS.md.
# `make bench BENCH_ARGS=--quick` is the few-minute profile (results under .tidemark/bench/results/);
# BENCH_ARGS also takes --only/--skip binlog snapshot freshness pause, --no-peers.
BENCH_ARGS ?=
bench: setup
	$(PY) bench/run_all.py $(BENCH_ARGS)

clean-stack:
	-$(VENV)/bin/tidemark devstack down
