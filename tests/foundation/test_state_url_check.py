"""``tidemark.state.url`` checked before a run: one line naming what is wrong, never the password."""

from __future__ import annotations

import pytest

from cdc_core.config import load_pipeline
from cdc_core.pipeline.preflight import ConnectionCheckError, check_state_store, state_location
from cdc_core.state.store import engine_url
from devstack.pipeline_file import write_pipeline
from devstack.procs import free_port

SECRET = "s3cr3t-pw"


def pipeline_with_state_url(tmp_path, url: str):
    path = write_pipeline(tmp_path / "p.yaml", host="127.0.0.1", port=3306, fe="127.0.0.1:8030", tables="shop.t",
                          name="shop", state_dir=tmp_path / "state", pipeline={"tidemark.state.url": url})
    return load_pipeline(path)


def check_fails(definition) -> str:
    with pytest.raises(ConnectionCheckError) as caught:
        check_state_store(definition)
    message = str(caught.value)
    assert caught.value.side == "state" and "\n" not in message and SECRET not in message
    return message


def test_a_state_directory_needs_no_check(tmp_path):
    definition = load_pipeline(write_pipeline(tmp_path / "p.yaml", host="127.0.0.1", port=3306, fe="127.0.0.1:8030",
                                              tables="shop.t", name="shop", state_dir=tmp_path / "state"))
    check_state_store(definition)
    assert state_location(definition) == str(tmp_path / "state")
    assert not (tmp_path / "state").exists()


def test_a_missing_driver_is_named(tmp_path):
    definition = pipeline_with_state_url(tmp_path, f"mysql+mysqldb://tm:{SECRET}@127.0.0.1:3306/state")
    assert "no driver for 'mysql+mysqldb' URLs" in check_fails(definition)
    assert SECRET not in state_location(definition)


def test_a_server_that_does_not_answer_is_named(tmp_path):
    message = check_fails(pipeline_with_state_url(tmp_path, f"postgresql://tm:{SECRET}@127.0.0.1:{free_port()}/state"))
    assert "the server does not answer" in message and "check the URL's host and port" in message


def test_plain_urls_name_the_installed_drivers():
    assert engine_url("mysql://u@h/db").drivername == "mysql+pymysql"
    assert engine_url("postgresql://u@h/db").drivername == "postgresql"
    import sqlalchemy as sa

    assert sa.create_engine("postgresql://u@h/db").dialect.driver == "psycopg2"


def test_a_missing_database_and_a_refused_login_on_postgresql(tmp_path, postgres_db):
    base = postgres_db.rsplit("/", 1)[0]
    missing = check_fails(pipeline_with_state_url(tmp_path, f"{base}/no_such_db_{free_port()}"))
    assert "the database 'no_such_db_" in missing and "does not exist" in missing
    host = base.split("@", 1)[1]
    refused = check_fails(pipeline_with_state_url(tmp_path, f"postgresql://nobody_here:{SECRET}@{host}/postgres"))
    assert "refused user 'nobody_here'" in refused
    check_state_store(pipeline_with_state_url(tmp_path, postgres_db))
