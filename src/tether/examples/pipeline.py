"""A question-generation pipeline: the job tether's demo and tests run.

A document is chunked, questions are generated for every chunk with the simulated LLM
provider (journaled, budgeted calls, several at a time), validated, deduplicated and exported
to a JSONL file. Every stage is checkpointed and every call journaled, so a worker killed
anywhere resumes without repaying a completed call.

The payload names its output file relative to the output directory, ``TETHER_EXAMPLE_OUTPUT_DIR``
(default ``./tether-output``, under the worker's working directory). A path that resolves outside
it (absolute, ``..``, through a symlink) is refused: at submission by an app that registers this
job type (``invalid_payload``), else by the job before any stage or call (``policy_block``: it
fails at once, never retried, as a retry would only be refused again).

Run it:  tether worker --app tether.examples.pipeline:app
Configure the simulated provider with TETHER_SIM_BILL (its bill file), TETHER_SIM_LATENCY
(seconds per call), TETHER_SIM_SEED, TETHER_SIM_TRANSIENT and TETHER_SIM_REFUSAL (rates).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from tether import (
    CallEstimate, Estimate, InvalidPayload, JobContext, PolicyBlock, Tether, TetherError,
)
from tether.providers.simulated import SimulatedProvider

__all__ = [
    "MAX_OUTPUT", "MODEL", "OUTPUT_DIR_ENV", "app", "chunk", "dedupe", "estimate", "export",
    "generate", "output_dir", "output_path", "prompt_for", "qa_pipeline", "sample_text", "sim",
    "validate",
]

app = Tether()

MODEL = "sim-small"
MAX_OUTPUT = 48
OUTPUT_DIR_ENV = "TETHER_EXAMPLE_OUTPUT_DIR"


def _provider() -> SimulatedProvider:
    return SimulatedProvider(
        os.environ.get("TETHER_SIM_BILL", "tether-sim-bill.jsonl"),
        seed=int(os.environ.get("TETHER_SIM_SEED", "7")), model=MODEL,
        latency_s=float(os.environ.get("TETHER_SIM_LATENCY", "0.02")),
        transient_rate=float(os.environ.get("TETHER_SIM_TRANSIENT", "0")),
        refusal_rate=float(os.environ.get("TETHER_SIM_REFUSAL", "0")), retry_after_s=0.05)


sim = _provider()


def chunk(text: str, size: int) -> list[str]:
    words, out, cur = text.split(), [], []
    for w in words:
        cur.append(w)
        if sum(len(x) + 1 for x in cur) >= size:
            out.append(" ".join(cur))
            cur = []
    if cur:
        out.append(" ".join(cur))
    return out


def prompt_for(chunk_text: str, n: int) -> str:
    return f"Write question {n} about this passage:\n{chunk_text}"


def output_dir() -> Path:
    """The one directory the pipeline writes under, resolved (symlinks followed)."""
    return Path(os.environ.get(OUTPUT_DIR_ENV) or "tether-output").resolve()


def output_path(name: Any, *, refuse: type[TetherError] = PolicyBlock) -> Path:
    """``payload["output"]`` as a file inside ``output_dir()``; anything else raises ``refuse``.

    The name must be a non-empty relative path, and the path it resolves to (after ``..`` and
    any symlink on the way) must lie strictly inside the directory.
    """
    base = output_dir()
    if not isinstance(name, str) or not name or "\0" in name or Path(name).is_absolute():
        raise refuse(f"output must be a file path relative to {base} ({OUTPUT_DIR_ENV}), "
                     f"got {name!r}")
    path = (base / name).resolve()
    if path == base or not path.is_relative_to(base):
        raise refuse(f"output {name!r} resolves to {path}, not a file inside {base} "
                     f"({OUTPUT_DIR_ENV})")
    return path


def estimate(payload: dict[str, Any]) -> list[CallEstimate]:
    output_path(payload.get("output"), refuse=InvalidPayload)
    chunks = chunk(payload["text"], payload.get("chunk_chars", 400))
    per = payload.get("questions_per_chunk", 4)
    longest = max((len(prompt_for(c, per).encode()) for c in chunks), default=0)
    return [CallEstimate("simulated", MODEL, len(chunks) * per, longest, MAX_OUTPUT)]


def generate(ctx: JobContext, chunks: list[str], per: int, concurrency: int) -> list[dict]:
    def one(item: tuple[int, int]) -> dict:
        i, n = item
        prompt = prompt_for(chunks[i], n)
        key = f"gen-{i}-{n}"
        out = ctx.call(key=key, provider="simulated", model=MODEL,
                       estimate=Estimate(input_text=prompt, max_output_tokens=MAX_OUTPUT),
                       fn=lambda: sim.complete(prompt, key=key, max_tokens=MAX_OUTPUT,
                                               job_id=ctx.id))
        return {"chunk": i, "n": n, "question": out["text"].capitalize() + "?"}
    items = [(i, n) for i in range(len(chunks)) for n in range(per)]
    return ctx.map(one, items, concurrency=concurrency)


def validate(questions: list[dict]) -> list[dict]:
    return [q for q in questions if 3 <= len(q["question"].split()) <= 60]


def dedupe(questions: list[dict]) -> list[dict]:
    seen, out = set(), []
    for q in questions:
        norm = " ".join(sorted(set(q["question"].lower().rstrip("?").split())))
        if norm not in seen:
            seen.add(norm)
            out.append(q)
    return out


def export(questions: list[dict], path: Path) -> dict:
    body = "".join(json.dumps(q, sort_keys=True) + "\n" for q in questions)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as fh:
        fh.write(body)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return {"path": str(path), "questions": len(questions),
            "sha256": hashlib.sha256(body.encode()).hexdigest()}


@app.job("qa_pipeline", safe_to_retry=True, max_attempts=10, estimator=estimate)
def qa_pipeline(ctx: JobContext, payload: dict[str, Any]) -> dict[str, Any]:
    output = output_path(payload.get("output"))  # before anything is spent
    chunks = ctx.stage("chunk", lambda: chunk(payload["text"], payload.get("chunk_chars", 400)))
    questions = ctx.stage("generate", lambda: generate(
        ctx, chunks, payload.get("questions_per_chunk", 4), payload.get("concurrency", 4)))
    valid = ctx.stage("validate", lambda: validate(questions))
    unique = ctx.stage("dedupe", lambda: dedupe(valid))
    exported = ctx.stage("export", lambda: export(unique, output))
    return {"chunks": len(chunks), "generated": len(questions), "valid": len(valid),
            "questions": exported["questions"], "sha256": exported["sha256"]}


SAMPLE = (Path(__file__).parent / "sample_document.txt")


def sample_text() -> str:
    return SAMPLE.read_text()
