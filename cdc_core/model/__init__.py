"""The model everything else builds on: change events, table schemas, binlog offsets, and how a
schema change transforms a schema. It imports nothing of ours from outside this package
(import-linter contract "cdc_core.model is the floor" in pyproject.toml), so the source, the sink,
the state and the Spark jobs can all depend on it and it on none of them.

* ``schema`` — :class:`TableId`, :class:`Column`, :class:`TableSchema`;
* ``offsets`` — :class:`BinlogOffset` (asking a live server for one is
  ``cdc_core/mysql/binlog_status.py``: the model does no I/O);
* ``events`` — row changes and schema changes; ``SchemaChangeEvent`` is the closed union of the
  schema-change classes and ``SCHEMA_CHANGE_EVENTS`` their one registry;
* ``schema_changes`` — :func:`apply_schema_change`, an event applied to schemas;
* ``schema_change_codec`` — schema-change events to and from JSON for the state store.

Dispatch over schema-change events: each consumer (schema application here, the codec, the
derivation of Doris changes, the Doris metadata applier, the schema-change steps) holds one
``match`` over the event classes that ends in ``case _: assert_never(event)``, rather than a
method per event on the classes. A method per event would pull every consumer's concern into the
model (Doris DDL, routing, the state machine), which is what this floor keeps out; a ``match`` keeps
each decision in the module that owns it, reads as one table of cases, and, because the union is
closed, a type checker flags a missing case and ``assert_never`` fails at run time.
``tests/foundation/test_schema_change_dispatch.py`` feeds every class (from ``SCHEMA_CHANGE_EVENTS``
and by walking ``SchemaChangeBase``'s subclasses) to every consumer, so a new event class is added
in ``events.py`` and each consumer that forgets it fails that test.

Import a module, not its names (``from cdc_core.model import events as ev``), so a consumer does
not repeat the list of event classes.
"""
