"""The default suite's samples of the corpus: databases its comparison covers in a few minutes.

Chosen to come out equal table for table, with nothing refused (the test asserts both). The whole
corpus, its figures and what still differs there: tests/corpus/RESULTS.md.
"""

from __future__ import annotations

SAMPLE_DBS = ("sakila", "mt_ctype_latin2", "mt_ctype_hebrew", "mt_type_bit", "mt_type_nchar", "mt_type_datetime")
MINIMAL_SAMPLE_DBS = ("world", "mt_ctype_latin2", "mt_type_bit", "mt_type_datetime")
