"""Pipeline definitions in Flink CDC's pipeline YAML format."""

from cdc_core.config.pipeline import PipelineConfigError, PipelineDefinition, load_pipeline, parse_pipeline

__all__ = ["PipelineConfigError", "PipelineDefinition", "load_pipeline", "parse_pipeline"]
