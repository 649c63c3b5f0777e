"""The default suite's samples of the corpus: databases its comparison covers in a few minutes.

Chosen to pass today; ``mt_type_datetime_b`` holds keyless tables whose rows are deleted (their Doris
tables are keyed by the hidden row identity: ``cdc_core/doris/row_identity.py``). Known to differ
elsewhere in the corpus, with the causes other work owns: charsets Python
has no exact codec for (``mt_ctype_sjis``, ``mt_ctype_eucjpms``, ``mt_ctype_utf32``,
``mt_ctype_latin1``), ``ALTER ... ADD PRIMARY KEY`` on a keyless table (refused by name, but it holds
the group's stream: ``mt_type_uint_b``).
"""

from __future__ import annotations

SAMPLE_DBS = ("sakila", "mt_ctype_latin2", "mt_ctype_hebrew", "mt_type_bit", "mt_type_nchar", "mt_type_datetime")
MINIMAL_SAMPLE_DBS = ("world", "mt_ctype_latin2", "mt_type_bit", "mt_type_datetime")
