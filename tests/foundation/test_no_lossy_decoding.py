"""No production code maps bytes to text (or text to bytes) with a lossy error handler.

A CDC tool that decodes a value with ``errors="replace"``/``"ignore"`` (or escapes it with
``backslashreplace``/``surrogateescape``) changes the value silently: the row arrives in Doris,
wrong. Every decode of data must be exact (``cdc_core.mysql.types.charsets``) or fail loudly.
This test reads the production packages, and the devstack (the Doris stand-in must store and show
exactly what it was sent, as Doris does), and fails with file:line for each lossy handler.

Allowed, because the text never reaches Doris (each entry: path, the line's code, why):
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("cdc_core", "jobs", "orchestration", "devstack")

# a lossy error handler in a decode/encode/open/read_text call, positional or by keyword
_HANDLERS = r"(?:replace|ignore|backslashreplace|surrogateescape|namereplace|xmlcharrefreplace)"
LOSSY = re.compile(
    rf"""(?:errors\s*=\s*['"]{_HANDLERS}['"])"""  # errors="replace" anywhere (decode, open, read_text, ...)
    rf"""|(?:\.(?:de|en)code\s*\([^()]*,\s*['"]{_HANDLERS}['"])"""  # .decode("utf-8", "replace")
    rf"""|(?:codecs\.\w+\([^()]*['"]{_HANDLERS}['"])"""  # codecs.decode(b, "utf-8", "ignore"), charmap_decode...
)

# path → fragments of the allowed lines, and why they are not data
_LOG_TAIL = "a log file's tail quoted in a start-up error of the local stack; never a row"
ALLOWED: dict[str, tuple[tuple[str, ...], str]] = {
    "cdc_core/mysql/query_text.py": (
        ('raw.decode("utf-8", errors="backslashreplace") == text',),
        "only compared with mysql-replication's own decoding of a statement, to find the statement's "
        "bytes, which are then decoded exactly in the client's charset",
    ),
    "orchestration/cli/dev_logs.py": (
        ('raw.decode("utf-8", errors="replace")',),
        "a line of `tidemark dev`'s own log echoed to the terminal (the log file keeps the bytes); "
        "never a row",
    ),
    "devstack/procs.py": (
        ('.decode(errors="replace")',),
        "a process's /proc command line, searched for the stack's own data directory; never a row",
    ),
    "cdc_core/doris/client.py": (
        ('self.content.decode(charset.group(1) if charset else "utf-8", errors="replace")',
         'self.content.decode("utf-8", errors="replace")'),
        "an HTTP answer's body as text (DorisResponse.text), quoted only in error messages (an HTTP error, "
        "Doris's error log of rejected rows); answers read as data are JSON parsed from the bytes",
    ),
    "devstack/stack.py": (('self.log_file.read_text(errors="replace")',), _LOG_TAIL),
    "devstack/mysql.py": (('self.error_log.read_text(errors="replace")',), _LOG_TAIL),
    "devstack/spark_cluster.py": (
        ('log.read_text(errors="replace")', '.log").read_text(errors="replace")',
         'log_path.read_text(errors="replace")'),
        _LOG_TAIL,
    ),
}
__doc__ += "".join(f"\n* ``{path}``: {why}." for path, (_, why) in ALLOWED.items())


def _lossy_lines() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if not LOSSY.search(line):
                    continue
                allowed = ALLOWED.get(rel)
                if allowed is not None and any(fragment in line for fragment in allowed[0]):
                    continue
                found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_the_pattern_catches_every_spelling():
    for line in ('v.decode("utf-8", errors="replace")', "v.decode('latin1', errors='ignore')",
                 'v.decode("utf-8", "replace")', "v.encode('ascii', 'backslashreplace')",
                 'raw.decode(errors="surrogateescape")', 'open(p, errors="replace")',
                 'codecs.decode(b, "utf-8", "ignore")', 'p.read_text(errors="replace")'):
        assert LOSSY.search(line), line
    for line in ('v.decode("utf-8")', 'warnings.filterwarnings("ignore")', 'shutil.rmtree(p, ignore_errors=True)',
                 's.replace("a", "b")', 'Literal["exception", "ignore"]', 'codecs.charmap_decode(v, "strict", t)'):
        assert not LOSSY.search(line), line


def test_no_production_code_decodes_with_a_lossy_error_handler():
    found = _lossy_lines()
    assert not found, ("lossy decoding in production code (a value would be altered silently; decode "
                       "exactly with cdc_core.mysql.types.charsets, or let it fail):\n  " + "\n  ".join(found))


def test_each_allowed_line_still_exists():
    """An allow-list entry whose line is gone is removed, so it cannot cover a new line later."""
    for path, (fragments, _) in ALLOWED.items():
        for fragment in fragments:
            assert fragment in (ROOT / path).read_text(encoding="utf-8"), f"{path}: {fragment!r} is gone"


def test_the_doris_stand_in_is_searched():
    """The stand-in's loads and query answers are data: none of its files may be allowed a lossy handler."""
    assert "devstack" in PACKAGES
    assert not [p for p in ALLOWED if p.startswith("devstack/doris/")]
