"""Parity: is Doris equal to MySQL? The checks after a run and ``tidemark verify``, in one place.

* ``row_checksum`` — the SQL both databases compute: each row's canonical text, its CRC32, and a
  key range's ``COUNT(*)`` and ``SUM`` of those hashes (two numbers per range travel, no rows).
* ``row_compare`` — rows read from both sides and hashed here, for the columns the two databases
  cannot render alike.
* ``chunk_parity`` — the asset checks after a snapshot run: each chunk's range, and a whole table.
* ``overlap`` — MySQL's side of the chunk parity computed while the same chunks' commits run.
* ``table_verify`` — ``tidemark verify``: a table compared segment by segment, a differing segment
  bisected down to the rows that differ.
* ``repair`` — ``tidemark verify --repair``: the differing rows re-read from MySQL and loaded with
  a sequence no later binlog change loses to, then verified again.
"""
