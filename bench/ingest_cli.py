"""`simplemem ingest` as a user runs it: the README command as a subprocess, timed from start to exit.

    python -m bench.ingest_cli EVENTS [EVENTS ...] [--repeat N] [--in-process] [--floor]

For each events file (JSON lines; ``python -m bench.longmemeval_data --out FILE`` writes one, and
``bench.beam`` leaves its ``events.jsonl`` in its inputs folder), ``--repeat`` times, each in a fresh store:
``./bin/simplemem ingest EVENTS --store DIR --json`` from another folder, with its wall time from
start to exit (model loading included), its CPU seconds (user + system, from ``wait4``), the peak RSS
of its process tree (sampled every 0.1 s, summed over the tree) and of its main process (the kernel's
high-water mark), and its RSS after each tenth of the input (whether memory grows with it). The
load average of the machine is printed beside every run: on a shared machine turns/s is noisy, the
memory figures are not.

``--in-process``: the same file through ``Pipeline.ingest`` in a child process, as ``bench.ingest``
does (turns/s after the models are loaded, peak RSS). ``--floor``: one spaCy pass (the whole
pipeline) and one int8 MiniLM pass over the same messages' texts, each alone: the model work per turn
that no ingestion can go below.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson
import psutil

REPO = Path(__file__).resolve().parents[1]
SAMPLE_SECONDS = 0.1


@dataclass
class Run:
    turns: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    tree_peak_mb: float = 0.0
    main_peak_mb: float = 0.0
    rss_by_tenth: list[float] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average at the start and at the end
    exit_code: int = 0


def tree_rss(proc: psutil.Process) -> int:
    """The resident bytes of ``proc`` and its descendants now (0 for one that has gone)."""
    total = 0
    for p in [proc, *_children(proc)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children(recursive=True)
    except psutil.Error:
        return []


def _hwm(pid: int) -> int:
    """The kernel's peak resident set of ``pid`` (``VmHWM``), in bytes; 0 once it has exited."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_cli(events: Path, extra_env: dict[str, str] | None = None) -> Run:
    """One ``simplemem ingest`` of ``events`` into a fresh store, from a scratch folder."""
    size = events.stat().st_size
    cwd = Path(tempfile.mkdtemp(prefix="simplemem-cli-bench-"))
    store = cwd / "store"
    run = Run(load=(os.getloadavg()[0], 0.0))
    cmd = [str(REPO / "bin" / "simplemem"), "ingest", str(events), "--store", str(store), "--json"]
    env = {**os.environ, **(extra_env or {})}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    watched = psutil.Process(proc.pid)
    peaks = [0, 0]
    done = threading.Event()

    def sample() -> None:
        tenth = 1
        while not done.is_set():
            rss = tree_rss(watched)
            peaks[0] = max(peaks[0], rss)
            peaks[1] = max(peaks[1], _hwm(proc.pid))
            read = _bytes_read(proc.pid, events)
            while read is not None and read >= size * tenth / 10 and tenth <= 10:
                run.rss_by_tenth.append(rss / 2**20)
                tenth += 1
            done.wait(SAMPLE_SECONDS)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = _communicate(proc)
    _, status, usage = os.wait4(proc.pid, 0) if proc.returncode is None else (0, 0, None)
    run.wall_s = time.perf_counter() - start
    done.set()
    sampler.join()
    run.exit_code = proc.returncode if proc.returncode is not None else os.waitstatus_to_exitcode(status)
    if usage is not None:
        run.cpu_s = usage.ru_utime + usage.ru_stime
        peaks[1] = max(peaks[1], usage.ru_maxrss * 1024)
    run.tree_peak_mb, run.main_peak_mb = peaks[0] / 2**20, peaks[1] / 2**20
    run.load = (run.load[0], os.getloadavg()[0])
    shutil.rmtree(cwd, ignore_errors=True)
    if run.exit_code not in (0, 3):  # 3: some messages failed (the accounting says which)
        raise SystemExit(f"simplemem ingest exited {run.exit_code}: {err.decode()[-2000:]}")
    report = orjson.loads(out.splitlines()[-1])
    run.turns = int(report["accepted"])
    return run


def _communicate(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Read the child's output without reaping it (``wait4`` reaps it, for its resource usage)."""
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    def drain(name: str, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            chunks[name].append(line)

    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout)),
        threading.Thread(target=drain, args=("err", proc.stderr)),
    ]
    for r in readers:
        r.start()
    for r in readers:
        r.join()
    return b"".join(chunks["out"]), b"".join(chunks["err"])


def _bytes_read(pid: int, events: Path) -> int | None:
    """How far the process has read ``events`` (its file offset), None when not open (yet)."""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == str(events.resolve()):
                    with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as f:
                        return int(f.readline().split()[1])
            except OSError:
                continue
    except OSError:
        pass
    return None


def in_process(events: Path) -> None:
    """(Child) ``Pipeline.ingest`` over the file after the models are loaded, as bench.ingest does."""
    import resource

    from simplemem.cli.console import quiet_libraries
    from simplemem.cli.inputs import open_input
    from simplemem.runtime import open_runtime
    from simplemem.schemas.settings import Settings

    quiet_libraries()
    store = Path(tempfile.mkdtemp(prefix="simplemem-bench-"))
    rt = open_runtime(Settings(), store)
    pipeline = rt.pipeline
    pipeline.warm_up()
    with open_input(str(events)) as source:
        start = time.perf_counter()
        report = pipeline.ingest(source.lines())
        seconds = time.perf_counter() - start
    rt.close()
    shutil.rmtree(store, ignore_errors=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(orjson.dumps({"turns": report.accepted, "seconds": seconds, "peak_mb": peak}).decode())


def floor(events: Path) -> None:
    """(Child) One spaCy pass and one int8 MiniLM pass over the messages' texts, each alone."""
    from simplemem.cli.console import quiet_libraries
    from simplemem.processors.language.nlp import load_pipeline, pipe
    from simplemem.runtime import open_runtime
    from simplemem.schemas.settings import Settings

    quiet_libraries()
    s = Settings()
    texts = [orjson.loads(line)["text"] for line in events.read_bytes().splitlines() if line.strip()]
    embedder = open_runtime(s, Path(tempfile.mkdtemp(prefix="simplemem-bench-"))).embedder
    embedder.encode(texts[:8])
    start, cpu = time.perf_counter(), time.process_time()
    embedder.encode(texts)
    minilm, minilm_cpu = time.perf_counter() - start, time.process_time() - cpu
    nlp = load_pipeline(s.spacy_model, s.blas_threads)
    pipe(nlp, texts[:8])
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), 256):  # the pipeline's batches: the docs of one batch at a time
        pipe(nlp, texts[i : i + 256])
    spacy, spacy_cpu = time.perf_counter() - start, time.process_time() - cpu
    print(
        orjson.dumps(
            {
                "turns": len(texts),
                "minilm_s": minilm,
                "minilm_cpu_s": minilm_cpu,
                "spacy_s": spacy,
                "spacy_cpu_s": spacy_cpu,
            }
        ).decode()
    )


def _child(mode: str, events: Path) -> dict[str, float]:
    load = os.getloadavg()[0]
    done = subprocess.run(
        [sys.executable, "-m", "bench.ingest_cli", f"--{mode}-child", str(events)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        check=True,
    )
    return {**orjson.loads(done.stdout.splitlines()[-1]), "load": load, "load_end": os.getloadavg()[0]}


def spread(values: list[float], digits: int = 1) -> str:
    """Median and range of repeated runs: "101.2 (97.3-104.0)"."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{np.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def report(events: Path, runs: list[Run]) -> None:
    turns = runs[0].turns
    print(f"\n{events.name}: {turns} turns, {events.stat().st_size / 1e6:.1f} MB")
    print(f"  command: ./bin/simplemem ingest {events} --store DIR --json   ({len(runs)} runs)")
    for i, r in enumerate(runs, 1):
        tenths = " ".join(f"{v:.0f}" for v in r.rss_by_tenth)
        print(
            f"  run {i}: {r.wall_s:.1f} s wall = {r.turns / r.wall_s:.1f} turns/s, {r.cpu_s:.0f} CPU-s "
            f"({1000 * r.cpu_s / r.turns:.1f} CPU-s per 1,000 turns), peak RSS tree {r.tree_peak_mb:.0f} MB, "
            f"main {r.main_peak_mb:.0f} MB; load {r.load[0]:.1f} -> {r.load[1]:.1f}"
        )
        print(f"         RSS (MB) after each tenth of the input: {tenths}")
    print(
        f"  turns/s wall (start-up included): {spread([r.turns / r.wall_s for r in runs])}; "
        f"CPU-s per 1,000 turns {spread([1000 * r.cpu_s / r.turns for r in runs])}; "
        f"peak RSS tree {spread([r.tree_peak_mb for r in runs], 0)} MB"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("events", type=Path, nargs="+", help="events files (JSON lines)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of the command per file")
    ap.add_argument("--in-process", action="store_true", help="also Pipeline.ingest in a child process")
    ap.add_argument("--floor", action="store_true", help="also one spaCy and one MiniLM pass alone")
    ap.add_argument("--in-process-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--floor-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.in_process_child:
        return in_process(args.events[0])
    if args.floor_child:
        return floor(args.events[0])
    print(f"{psutil.cpu_count()} cores; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for events in args.events:
        runs = [run_cli(events.resolve()) for _ in range(args.repeat)]
        report(events, runs)
        if args.in_process:
            r = _child("in-process", events.resolve())
            print(
                f"  in-process (Pipeline.ingest, models loaded first): {r['turns'] / r['seconds']:.1f} turns/s, "
                f"peak RSS {r['peak_mb']:.0f} MB; load {r['load']:.1f} -> {r['load_end']:.1f}"
            )
        if args.floor:
            f = _child("floor", events.resolve())
            both = f["minilm_s"] + f["spacy_s"]
            print(
                f"  floor: int8 MiniLM alone {f['minilm_s']:.1f} s ({f['minilm_cpu_s']:.1f} CPU-s), spaCy alone "
                f"{f['spacy_s']:.1f} s ({f['spacy_cpu_s']:.1f} CPU-s) over the {f['turns']} texts: "
                f"{f['turns'] / both:.1f} turns/s for both one after the other; "
                f"load {f['load']:.1f} -> {f['load_end']:.1f}"
            )


if __name__ == "__main__":
    main()
