"""The one output format every benchmark ends with, parsed by `make bench`:

BENCH <name> <value> <unit> goal <op> <goal>
"""

from __future__ import annotations

import operator as _op
import re
from collections.abc import Callable
from dataclasses import dataclass

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": _op.le,
    ">=": _op.ge,
    "=": _op.eq,
    "<": _op.lt,
    ">": _op.gt,
}
LINE = re.compile(r"^BENCH (\S+) (\S+) (\S+) goal (<=|>=|=|<|>) (\S+)$")


@dataclass(frozen=True)
class Figure:
    name: str
    value: float
    unit: str
    op: str
    goal: float
    digits: int = 1

    @property
    def met(self) -> bool:
        return _OPS[self.op](self.value, self.goal)

    def line(self) -> str:
        value = f"{self.value:.{self.digits}f}"
        return f"BENCH {self.name} {value} {self.unit} goal {self.op} {self.goal:g}"


def parse(line: str) -> Figure | None:
    match = LINE.match(line.strip())
    if match is None:
        return None
    name, value, unit, op, goal = match.groups()
    return Figure(name, float(value), unit, op, float(goal))


# The floor controller's figures (bench/floor.py): evidence about the operator's
# figures, not targets of their own, so they carry no goal.
FLOOR_LINE = re.compile(r"^FLOOR (\S+) (\S+) (\S+)$")
FLOOR_RATIO_GOAL = 1.15


def parse_floor(line: str) -> tuple[str, float] | None:
    match = FLOOR_LINE.match(line.strip())
    if match is None:
        return None
    name, value, _unit = match.groups()
    return name, float(value)


def floor_ratio(operator_lines: list[str], floor_lines: list[str]) -> Figure | None:
    """`operator_floor_ratio`: the operator's `converge_1000_s` (its BENCH line) over the
    floor controller's (its FLOOR line) from the same run; None if either is missing."""
    operator_s = next(
        (f.value for f in map(parse, operator_lines) if f and f.name == "converge_1000_s"),
        None,
    )
    floor_s = next(
        (v for name, v in filter(None, map(parse_floor, floor_lines)) if name == "converge_1000_s"),
        None,
    )
    if operator_s is None or floor_s is None:
        return None
    if floor_s <= 0:
        raise ValueError(f"floor converge time must be positive, got {floor_s}")
    return Figure("operator_floor_ratio", operator_s / floor_s, "x", "<=", FLOOR_RATIO_GOAL, 2)


# The operator's CPU seconds over the converge (bench/operator.py prints it as a CPU line
# next to its BENCH lines; the floor prints `FLOOR cpu_s_1000`).
CPU_LINE = re.compile(r"^CPU (\S+) (\S+) (\S+)$")
CPU_RATIO_GOAL = 1.2


def cpu_ratio(operator_lines: list[str], floor_lines: list[str]) -> Figure | None:
    """`operator_cpu_ratio`: the operator process's CPU seconds over the 1,000 converge
    (its `CPU operator_cpu_s_1000` line) over the floor controller's (`FLOOR cpu_s_1000`)
    from the same pair; None if either is missing. Steadier than the wall-clock ratio:
    it leaves out the apiserver's and the machine's other work."""
    operator_s = None
    for line in operator_lines:
        match = CPU_LINE.match(line.strip())
        if match and match.group(1) == "operator_cpu_s_1000":
            operator_s = float(match.group(2))
    floor_s = next(
        (v for name, v in filter(None, map(parse_floor, floor_lines)) if name == "cpu_s_1000"),
        None,
    )
    if operator_s is None or floor_s is None:
        return None
    if floor_s <= 0:
        raise ValueError(f"floor CPU seconds must be positive, got {floor_s}")
    return Figure("operator_cpu_ratio", operator_s / floor_s, "x", "<=", CPU_RATIO_GOAL, 2)


def median_ratio(ratios: list[Figure]) -> Figure:
    """`operator_floor_ratio` over several floor/operator pairs: the median pair's. One
    pair's ratio moves by ±0.15 on this machine with the same code (the 2 cores are
    shared with other machines' work), more than the margin the target leaves."""
    if not ratios:
        raise ValueError("no floor/operator pair to take a median of")
    ordered = sorted(ratios, key=lambda f: f.value)
    return ordered[len(ordered) // 2]


def verdict(lines: list[str]) -> str:
    """One line under the summary: how many targets are met, and which are not."""
    figures = [f for f in map(parse, lines) if f is not None]
    missed = [f.name for f in figures if not f.met]
    met = len(figures) - len(missed)
    tail = f"; missed: {', '.join(missed)}" if missed else ""
    return f"targets met: {met}/{len(figures)}{tail}"
