"""Loading a pipeline file: YAML, ``${VAR}`` from the environment, validation, one-line errors.

Every error names the file, the key and what is wrong, on one line, so that a user can fix a
pipeline without reading a traceback. Values that come from secret keys (passwords, the state
URL) never appear in an error.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from cdc_core.config.options import PREFIXED_OPTIONS, SECRET_KEYS
from cdc_core.config.pipeline_options import PipelineOptions
from cdc_core.config.rule_options import RouteRule, TransformRule
from cdc_core.config.sink_options import DorisSinkOptions
from cdc_core.config.source_options import MySqlSourceOptions

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_BLOCKS = ("source", "sink", "route", "transform", "pipeline")
_SOURCES = {"mysql": MySqlSourceOptions}
_SINKS = {"doris": DorisSinkOptions}


class PipelineConfigError(ValueError):
    """A pipeline file that cannot be used. ``str()`` is one line: ``file: key: what is wrong``."""

    def __init__(self, path: Path | str, key: str | None, problem: str, more: tuple[str, ...] = ()):
        self.path, self.key, self.problem = str(path), key, problem
        self.more = more  # the other problems found with this one, each a line like the first
        where = f"{self.path}: {key}: " if key else f"{self.path}: "
        self.first = where + problem.replace("\n", " ")
        count = f" (and {len(more)} more problem{'s' if len(more) > 1 else ''})" if more else ""
        super().__init__(self.first + count)

    @property
    def lines(self) -> tuple[str, ...]:
        """Every problem found, one line each (``str()`` is the first, with how many more there are)."""
        return (self.first, *self.more)

    def at_lines(self, text: str) -> PipelineConfigError:
        """The same error with ``(line N)`` after each problem whose key the YAML text shows."""
        try:
            root = yaml.compose(text)
        except yaml.YAMLError:
            return self

        def located(key: str | None, problem: str) -> str:
            line = _line_of(root, key) if key else None
            return f"{problem} (line {line})" if line else problem

        more = tuple(_relocate(m, self.path, root) for m in self.more)
        out = PipelineConfigError(self.path, self.key, located(self.key, self.problem), more)
        return out


def _line_of(root: Any, key: str) -> int | None:
    """The 1-based line of ``block.option``, ``block[i].option`` or ``block`` in the composed YAML."""
    m = re.match(r"^([A-Za-z_\-]+)(?:\[(\d+)\])?(?:\.(.+))?$", key)
    if not m or not isinstance(root, yaml.MappingNode):
        return None
    block, index, option = m.group(1), m.group(2), m.group(3)
    node = _child(root, block)
    if node is None:
        return None
    found = node
    if index is not None:
        value = node[1]
        if not isinstance(value, yaml.SequenceNode) or int(index) >= len(value.value):
            return node[0].start_mark.line + 1
        item = value.value[int(index)]
        found = (item, item)
        node = (item, item)
    if option is not None:
        found = _child(node[1], option)  # a missing option has no line
        if found is None:
            return None
    return found[0].start_mark.line + 1


def _child(node: Any, name: str) -> tuple[Any, Any] | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == name:
            return key_node, value_node
    return None


def _relocate(line: str, path: str, root: Any) -> str:
    m = re.match(rf"^{re.escape(path)}: ([^:\s]+): (.*)$", line)
    if not m:
        return line
    where = _line_of(root, m.group(1))
    return f"{line} (line {where})" if where else line


@dataclass(frozen=True)
class PipelineDefinition:
    """A validated pipeline: what to read, where to write, how to run."""

    path: Path
    source: MySqlSourceOptions
    sink: DorisSinkOptions
    routes: tuple[RouteRule, ...]
    transforms: tuple[TransformRule, ...]
    pipeline: PipelineOptions

    @property
    def name(self) -> str:
        return self.pipeline.slug

    @property
    def state_dir(self) -> Path:
        """Where this pipeline keeps its state; relative paths are taken from the working directory."""
        return Path(self.pipeline.state_dir or f".tidemark/state/{self.name}").resolve()



def _substitute(value: Any, key: str, path: Path, env: dict[str, str]) -> Any:
    if isinstance(value, str):
        def repl(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise PipelineConfigError(
                path, key, f"environment variable {name} is not set (set it, or write ${{{name}:-default}})"
            )

        return _ENV.sub(repl, value)
    if isinstance(value, dict):
        return {k: _substitute(v, f"{key}.{k}" if key else str(k), path, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, f"{key}[{i}]", path, env) for i, v in enumerate(value)]
    return value


def _gather_prefixed(block: dict[str, Any], prefixes: tuple[str, ...], block_name: str, path: Path) -> dict:
    """Move ``prefix.*`` keys into one dict per prefix, under the alias ``prefix*``."""
    out = dict(block)
    for prefix in prefixes:
        bag = {}
        for key in [k for k in out if isinstance(k, str) and k.startswith(prefix)]:
            value = out.pop(key)
            if isinstance(value, dict | list):
                raise PipelineConfigError(path, f"{block_name}.{key}", "expected a scalar value")
            bag[key[len(prefix):]] = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        out[prefix + "*"] = bag
    return out


def _describe(error: dict, block_name: str, model: type[BaseModel], raw: dict) -> tuple[str, str]:
    loc = [str(p) for p in error.get("loc", ())]
    key = loc[0] if loc else ""
    where = f"{block_name}.{key}" if key else block_name
    kind = error.get("type", "")
    secret = key in SECRET_KEYS or key.endswith("password")
    value = error.get("input")
    shown = "" if secret else f", got {value!r}"
    if kind == "missing":
        return where, f"missing required option (add '{key}: ...' under '{block_name}:')"
    if kind == "extra_forbidden":
        known = sorted({f.alias or n for n, f in model.model_fields.items()})
        hint = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
        suffix = (f" (did you mean '{hint[0]}'?)" if hint
                  else " (remove it; docs/configuration.md lists the options Tidemark reads)")
        return where, f"unknown option{suffix}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return where, f"expected an integer{shown}"
    if kind in ("float_parsing", "float_type"):
        return where, f"expected a number{shown}"
    if kind in ("bool_parsing", "bool_type"):
        return where, f"expected true or false{shown}"
    if kind in ("string_type",):
        return where, f"expected a string{shown}"
    if kind in ("list_type",):
        return where, f"expected a list{shown}"
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return where, f"expected one of {expected}{shown}"
    message = str(error.get("msg", "invalid value"))
    message = message.removeprefix("Value error, ")
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        message = message.replace("Input should be", "must be") + shown
    if not key:
        # A cross-option check names its option at the start of the message.
        named = re.match(r"^([A-Za-z0-9_.\-]+): (.*)$", message)
        if named:
            return f"{block_name}.{named.group(1)}", named.group(2)
        return block_name, message
    return where, message


def _validate(model: type[BaseModel], block: dict, block_name: str, path: Path, raw: dict) -> Any:
    try:
        return model.model_validate(block)
    except ValidationError as exc:
        errors = exc.errors()
        where, problem = _describe(errors[0], block_name, model, raw)
        more = tuple(str(PipelineConfigError(path, *_describe(e, block_name, model, raw))) for e in errors[1:])
        raise PipelineConfigError(path, where, problem, more) from None


def _as_mapping(value: Any, key: str, path: Path) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PipelineConfigError(path, key, f"expected a mapping of options, got {type(value).__name__}")
    return value


def _as_list(value: Any, key: str, path: Path) -> list[dict]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise PipelineConfigError(path, f"{key}[{i}]", "expected a mapping of options")
    return items


def parse_pipeline(text: str, path: Path | str, env: dict[str, str] | None = None) -> PipelineDefinition:
    """The pipeline file's text, validated; a problem raises :class:`PipelineConfigError` naming the
    file, the key, its line when the YAML shows the key, and what to do."""
    try:
        return _parse_pipeline(text, path, env)
    except PipelineConfigError as exc:
        raise exc.at_lines(text) from None


def _parse_pipeline(text: str, path: Path | str, env: dict[str, str] | None = None) -> PipelineDefinition:
    """Every block is checked even when an earlier one has a problem: a typo in ``source`` must not
    hide one in ``sink`` or ``pipeline`` (the error carries them all, one line each)."""
    path = Path(path)
    env = dict(os.environ) if env is None else env
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise PipelineConfigError(path, where, f"not valid YAML: {problem}") from None
    if not isinstance(raw, dict):
        raise PipelineConfigError(path, None, "expected a mapping with 'source', 'sink' and 'pipeline' blocks")
    problems: list[PipelineConfigError] = []

    def checked(block: Callable[[], Any]) -> Any:
        """The block's value, or None with its problems recorded."""
        try:
            return block()
        except PipelineConfigError as exc:
            problems.append(exc)
            return None

    for key in raw:
        if key not in _BLOCKS:
            hint = difflib.get_close_matches(str(key), _BLOCKS, n=1)
            problems.append(PipelineConfigError(
                path, str(key), "unknown block" + (f" (did you mean '{hint[0]}'?)" if hint else "")
            ))
    for required in ("source", "sink"):
        if required not in raw:
            problems.append(PipelineConfigError(path, required, "missing required block"))
    blocks: dict[str, Any] = {}
    for key, value in raw.items():
        try:
            blocks[str(key)] = _substitute(value, str(key), path, env)
        except PipelineConfigError as exc:  # that block is not checked further: its text is not complete
            problems.append(exc)
    source = checked(lambda: _source(blocks["source"], path, raw)) if "source" in blocks else None
    sink = checked(lambda: _sink(blocks["sink"], path, raw)) if "sink" in blocks else None
    routes = tuple(checked(lambda i=i, r=r: _validate(RouteRule, r, f"route[{i}]", path, raw))
                   for i, r in enumerate(checked(lambda: _as_list(blocks.get("route"), "route", path)) or []))
    transforms = tuple(checked(lambda i=i, t=t: _validate(TransformRule, t, f"transform[{i}]", path, raw))
                       for i, t in enumerate(checked(lambda: _as_list(blocks.get("transform"), "transform", path))
                                             or []))
    pipeline = checked(lambda: _pipeline_options(blocks.get("pipeline"), path, raw)) if (
        "pipeline" in blocks or "pipeline" not in raw) else None
    if problems:
        lines = [line for problem in problems for line in problem.lines]
        first = problems[0]
        raise PipelineConfigError(first.path, first.key, first.problem, (*first.more, *lines[len(first.lines):]))
    return PipelineDefinition(path, source, sink, routes, transforms, pipeline)


def _source(block: Any, path: Path, raw: dict) -> Any:
    source_raw = _as_mapping(block, "source", path)
    source_type = str(source_raw.get("type", "")).lower()
    if source_type not in _SOURCES:
        problem = "missing required option" if not source_type else f"unsupported source type {source_type!r}"
        raise PipelineConfigError(path, "source.type", problem + " (supported: mysql)")
    source_raw = _gather_prefixed(source_raw, PREFIXED_OPTIONS["source"], "source", path)
    return _validate(_SOURCES[source_type], source_raw, "source", path, raw)


def _sink(block: Any, path: Path, raw: dict) -> Any:
    sink_raw = _as_mapping(block, "sink", path)
    sink_type = str(sink_raw.get("type", "")).lower()
    if sink_type not in _SINKS:
        problem = "missing required option" if not sink_type else f"unsupported sink type {sink_type!r}"
        raise PipelineConfigError(path, "sink.type", problem + " (supported: doris)")
    sink_raw = _gather_prefixed(sink_raw, PREFIXED_OPTIONS["sink"], "sink", path)
    return _validate(_SINKS[sink_type], sink_raw, "sink", path, raw)


def _pipeline_options(block: Any, path: Path, raw: dict) -> PipelineOptions:
    pipeline_raw = _as_mapping(block, "pipeline", path)
    pipeline_raw = _gather_prefixed(pipeline_raw, PREFIXED_OPTIONS["pipeline"], "pipeline", path)
    pipeline_raw.setdefault("name", path.stem)
    unknown_tidemark = [k for k in pipeline_raw if isinstance(k, str) and k.startswith("tidemark.")
                        and k not in {f.alias for f in PipelineOptions.model_fields.values()}]
    if unknown_tidemark:
        known = sorted(f.alias for f in PipelineOptions.model_fields.values() if f.alias)
        hint = difflib.get_close_matches(unknown_tidemark[0], known, n=1, cutoff=0.8)
        raise PipelineConfigError(path, f"pipeline.{unknown_tidemark[0]}", "unknown Tidemark option"
                                  + (f" (did you mean '{hint[0]}'?)" if hint else " (docs/configuration.md lists them)"))
    return _validate(PipelineOptions, pipeline_raw, "pipeline", path, raw)


def load_pipeline(path: Path | str, env: dict[str, str] | None = None) -> PipelineDefinition:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise PipelineConfigError(path, None, "no such pipeline file (check the path; pipelines/demo.yaml is an "
                                              "example)") from None
    except OSError as exc:
        raise PipelineConfigError(path, None, f"cannot read the file: {exc.strerror}") from None
    return parse_pipeline(text, path, env)
