"""`make bench`: every benchmark in turn, then all their BENCH lines together.

    DEPLOYPLANE_TOOLS_BIN=$(bash tools/k8s/build.sh path) .venv/bin/python -m bench [--quick]

Each benchmark runs as its own process (`python -m bench.controlplane`, `python -m
bench.cli`, `python -m bench.floor`, `python -m bench.operator`, `python -m
bench.dataplane`, `python -m bench.threads`) and its output streams through. The floor
and the operator run back to back on the same set-up, in pairs whose order alternates,
and `operator_floor_ratio` is the median pair's operator `converge_1000_s` over its
floor's; `operator_cpu_ratio` the median pair's operator CPU seconds over the converge
over the floor controller's (the `CPU operator_cpu_s_1000` and `FLOOR cpu_s_1000`
lines). `BENCH_PROFILE=dir` records profiles of both (`bench/profiling.py`).
The emulator benchmark prints its own table; when it prints no BENCH lines, they are
derived from that table (`emulator_get_rps`, `emulator_post_rps`, and
`emulator_p99_ms`, the worse of the two p99 latencies).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

from bench.report import Figure, cpu_ratio, floor_ratio, median_ratio, parse, verdict

_ROW = re.compile(
    r"^(GET|POST) /v2/deployments\S*\s+(\d+) req/s\s+p50\s+([\d.]+) ms\s+p99\s+([\d.]+) ms"
)


def run(argv: list[str]) -> tuple[int, list[str]]:
    print(f"== {' '.join(argv)}", flush=True)
    process = subprocess.Popen(
        [sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        print(line, end="", flush=True)
        lines.append(line.rstrip("\n"))
    return process.wait(), lines


def emulator_figures(lines: list[str]) -> list[Figure]:
    rates: dict[str, float] = {}
    p99s: list[float] = []
    for line in lines:
        match = _ROW.match(line)
        if match:
            method, rate, _p50, p99 = match.groups()
            rates[method] = float(rate)
            p99s.append(float(p99))
    figures = []
    if "GET" in rates:
        figures.append(Figure("emulator_get_rps", rates["GET"], "req/s", ">=", 1000, digits=0))
    if "POST" in rates:
        figures.append(Figure("emulator_post_rps", rates["POST"], "req/s", ">=", 300, digits=0))
    if p99s:
        figures.append(Figure("emulator_p99_ms", max(p99s), "ms", "<=", 50))
    return figures


def bench_lines(lines: list[str]) -> list[str]:
    """The final BENCH lines of a benchmark (its progress log may repeat them)."""
    seen: dict[str, str] = {}
    for line in lines:
        figure = parse(line)
        if figure is not None and line.startswith("BENCH "):
            seen[figure.name] = line
    return list(seen.values())


def pair_order(
    pair: int, floor_run: list[str], operator_run: list[str]
) -> list[tuple[str, list[str]]]:
    """The two runs of pair `pair` (from 0) in the order they run: the floor first in
    even pairs, the operator first in odd ones."""
    runs = [("floor", floor_run), ("operator", operator_run)]
    return runs if pair % 2 == 0 else runs[::-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="100 resources and short windows (a smoke run)"
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=None,
        help="floor/operator pairs for operator_floor_ratio (default 4; 1 with --quick)",
    )
    args = parser.parse_args()
    args.pairs = args.pairs or (1 if args.quick else 4)
    operator_args = ["--n", "100", "--steady-window", "20", "--resync", "10"] if args.quick else []
    # The raw driver: a minimal HTTP/1.1 load generator. httpx, on the same 2 cores, spends
    # more CPU per request than the server and caps even /healthz near 400 req/s, so it
    # measures itself; the raw driver leaves the cores to the server being measured.
    controlplane_args = ["--driver", "raw", "--concurrency", "4"]
    controlplane_args += ["--seconds", "2"] if args.quick else []
    failures = 0
    summary: list[str] = []

    code, lines = run(["-m", "bench.controlplane", *controlplane_args])
    failures += code != 0
    found = bench_lines(lines)
    summary += found or [figure.line() for figure in emulator_figures(lines)]

    # The command line as a user meets it: whole processes, against the emulator.
    code, lines = run(["-m", "bench.cli", *(["--runs", "3"] if args.quick else [])])
    failures += code != 0
    summary += bench_lines(lines)

    # The pairs alternate which of the two runs first (floor, operator; then operator,
    # floor; ...). On this machine every run of a long sequence tends to be slower than
    # the one before (sustained load on shared cores), so always running the floor first
    # would charge that drift to the operator; alternating cancels it out of the median
    # (`docs/benchmarks.md`, "Which runs first"). The first operator run measures
    # everything; the others only converge.
    ratios: list[Figure] = []
    cpu_ratios: list[Figure] = []
    for pair in range(args.pairs):
        extra = [] if pair == 0 else ["--converge-only"]
        floor_run = ["-m", "bench.floor", *operator_args]
        operator_run = ["-m", "bench.operator", *operator_args, *extra]
        outputs: dict[str, list[str]] = {}
        for label, argv in pair_order(pair, floor_run, operator_run):
            code, outputs[label] = run(argv)
            failures += code != 0
        floor_lines, lines = outputs["floor"], outputs["operator"]
        if pair == 0:
            summary += bench_lines(lines)
            summary += [line for line in floor_lines if line.startswith("FLOOR ")]
        cpu = cpu_ratio(lines, floor_lines)
        if cpu is not None:
            cpu_ratios.append(cpu)
            line = f"== pair {pair + 1}/{args.pairs}: operator_cpu_ratio {cpu.value:.2f}"
            print(line, flush=True)
        ratio = floor_ratio(lines, floor_lines)
        if ratio is None:
            failures += 1
            print("no operator_floor_ratio: a converge_1000_s line is missing", flush=True)
            continue
        ratios.append(ratio)
        order = "floor first" if pair % 2 == 0 else "operator first"
        print(
            f"== pair {pair + 1}/{args.pairs} ({order}): operator_floor_ratio {ratio.value:.2f}",
            flush=True,
        )
    if ratios:
        listed = ", ".join(f"{r.value:.2f}" for r in ratios)
        summary.append(median_ratio(ratios).line())
        summary.append(f"# operator_floor_ratio: the median of {len(ratios)} pairs ({listed})")
    if cpu_ratios:
        listed = ", ".join(f"{r.value:.2f}" for r in cpu_ratios)
        summary.append(median_ratio(cpu_ratios).line())
        summary.append(f"# operator_cpu_ratio: the median of {len(cpu_ratios)} pairs ({listed})")
    else:
        failures += 1
        print("no operator_cpu_ratio: a CPU or FLOOR cpu_s_1000 line is missing", flush=True)

    # The listener agent: 100 deployments rolled out on kwok nodes (bench/dataplane.py).
    code, lines = run(["-m", "bench.dataplane", *(["--steady-window", "20"] if args.quick else [])])
    failures += code != 0
    summary += bench_lines(lines)

    # The in-memory agent server's restart on its saved threads (bench/threads.py).
    code, lines = run(
        ["-m", "bench.threads", *(["--threads", "100", "--starts", "1"] if args.quick else [])]
    )
    failures += code != 0
    summary += bench_lines(lines)

    print("== BENCH summary", flush=True)
    for line in summary:
        print(line, flush=True)
    print(verdict(summary), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
