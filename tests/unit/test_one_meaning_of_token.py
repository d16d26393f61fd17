"""The word ``token`` keeps one meaning in the source: API, callback, LLM and trace tokens. The
store's fencing value of a lease is the attempt number that holds it, and is named so
(``attempt``, the column ``lease_attempt``); only the old migrations still say
``lease_token``."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "tether"
FENCING = re.compile(r"\btoken: int\b|\blease_token\b|%\(token\)s|(?<![\w:]):token\b")


def offenders() -> list[str]:
    out = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in (".py", ".sql") or "migrations" in path.parts:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if FENCING.search(line):
                out.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
    return out


def test_the_fencing_value_is_called_attempt_not_token() -> None:
    assert offenders() == []


def test_the_check_sees_a_fencing_token() -> None:
    assert FENCING.search("    def start(self, job_id: int, token: int) -> None: ...")
    assert FENCING.search("WHERE id = :id AND lease_token = :token")
    assert not FENCING.search("def check_callback(self, job_id: int, token: str) -> None:")
    assert not FENCING.search("VALUES (:id, :token_hash, :now)")
