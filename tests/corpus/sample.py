"""The default suite's samples of the corpus: databases its comparison covers in a few minutes."""

from __future__ import annotations

SAMPLE_DBS = ("sakila", "mt_type_enum", "mt_type_set", "mt_ctype_cp1251", "mt_ctype_latin2", "mt_ctype_sjis")
MINIMAL_SAMPLE_DBS = ("world", "mt_ctype_latin2")
