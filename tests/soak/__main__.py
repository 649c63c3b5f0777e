"""``python -m tests.soak --minutes 30 --seed 1 [--out DIR] [--rate 2000] [--keep]``: the soak, its
figures in ``DIR/figures.json`` and ``DIR/summary.md`` (``tests/soak/harness.py`` says what it does).
Exit 0 when every quiet point found Doris equal to MySQL, every kind of fault happened and
``tidemark verify`` agreed at the end; 1 otherwise."""

from __future__ import annotations

import argparse
import logging
import shlex
import signal
import sys
import time
from pathlib import Path

from tests.soak.harness import Soak, SoakConfig, summary_markdown
from tests.soak.schedule import FAULTS, Event


def verdict(fig: dict) -> list[str]:
    """What is wrong with a soak's figures (empty: it passed)."""
    problems = []
    if fig.get("error"):
        problems.append(fig["error"])
    if fig["differences"]:
        problems.append(f"{fig['differences']} difference(s) at the quiet points")
    missing = [e.value for e in FAULTS if not fig["faults"].get(e.value)]
    if missing:
        problems.append(f"faults that did not happen: {missing}")
    healed = [e for e in fig["events"] if e["kind"] == Event.PURGE.value and e["detail"].get("healed_after_s") is not None]
    if fig["faults"].get(Event.PURGE.value) and not healed:
        problems.append("the purged binlog was not healed by the configured resnapshot")
    if not fig["quiet_points_checked"]:
        problems.append("no quiet point was checked")
    verify = fig.get("verify") or {}
    if verify.get("rc") != 0 or not verify.get("equal"):
        problems.append(f"tidemark verify at the end: {verify.get('rc')}, equal={verify.get('equal')}")
    return problems


def _stop(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # the harness's finally stops the writer, dev and the servers


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--rate", type=float, default=2000.0, help="rows/s written (default 2000)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="leave the servers running at the end")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time())
    out = args.out or Path(".tidemark/soak") / time.strftime("%Y%m%d-%H%M%S")
    Path(out).mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s",
                        handlers=[logging.StreamHandler(), logging.FileHandler(Path(out) / "soak.log")])
    for noisy in ("alembic", "dagster"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("tests.soak").info("soak: %s minutes, seed %d, %s rows/s, output in %s", args.minutes, seed,
                                          args.rate, out)
    fig = Soak(SoakConfig(args.minutes, seed, Path(out), args.rate, args.keep)).run()
    command = f"python -m tests.soak --minutes {args.minutes:g} --seed {seed}" + (
        f" --rate {args.rate:g}" if args.rate != 2000 else "")
    problems = verdict(fig)
    text = summary_markdown(fig, command)
    if problems:
        text += "\n" + "\n".join(f"- {p}" for p in problems) + "\n"
    (Path(out) / "summary.md").write_text(text)
    print(text, flush=True)
    print(f"figures: {Path(out).resolve() / 'figures.json'}   ({shlex.join(sys.argv)})", flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
