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
