"""The schema-change coordinator's pieces (Flink CDC's ``SchemaRegistry`` side): ``derivation``
turns a DDL's events into the changes each Doris table gets under ``schema.change.behavior``,
``merging`` widens a table that several sources route to, and ``registry`` persists the
coordinator's state machine so a crashed ``schema_change`` job resumes where it stopped. The steps
that drive them over the live pipeline are ``cdc_core/pipeline/schema_change.py``.
"""
