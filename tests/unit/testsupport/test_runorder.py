"""RUN_FIRST and RUN_LAST hold whatever order pytest-random-order shuffles the tests
into (tests/support/runorder.py, sorted by tests/e2e/conftest.py after the shuffle)."""

from __future__ import annotations

import re

import pytest

CONFTEST = """
import pytest
from tests.support import runorder

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    items.sort(key=runorder.place)
"""


def _order(result: pytest.RunResult) -> list[str]:
    return re.findall(r"::test_(\w+) PASSED", result.stdout.str())


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_first_and_last_hold_in_a_shuffled_order(pytester: pytest.Pytester, seed: int) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_demo="RUN_FIRST = True\ndef test_demo():\n    pass\n",
        test_node=(
            "RUN_LAST = ('test_down', 'test_up_again')\n"
            + "".join(f"def test_{n}():\n    pass\n" for n in ("up_again", "a", "down", "b"))
        ),
        test_other="".join(f"def test_{n}():\n    pass\n" for n in ("c", "d", "e")),
    )
    result = pytester.runpytest("-v", f"--random-order-seed={seed}")
    order = _order(result)
    assert sorted(order) == sorted(["demo", "a", "b", "c", "d", "e", "down", "up_again"])
    assert order[0] == "demo"
    assert order[-2:] == ["down", "up_again"]


def test_the_shuffle_does_change_the_order(pytester: pytest.Pytester) -> None:
    # Without this, the test above would also pass if nothing were shuffled at all.
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_other="".join(f"def test_{n}():\n    pass\n" for n in "abcdefgh"),
    )
    orders = {
        tuple(_order(pytester.runpytest("-v", f"--random-order-seed={seed}"))) for seed in (1, 2, 3)
    }
    assert len(orders) > 1
