"""Hooks into a running pipeline that change nothing it computes: ``faults`` (named points where
tests and the crash matrix make it fail on purpose, inert without ``TIDEMARK_FAULTS``) and
``phases`` (wall time per phase, for ``tidemark run --once --timings`` and the benchmark).
"""
