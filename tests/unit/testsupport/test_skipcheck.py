"""The skip check of `make test`'s tiers (tests/support/skipcheck.py): a run with
`--skips-allowed` lists its skips by reason and fails on one its lists do not allow,
wherever the skip happens (a test, a fixture, a mark, a whole module at collection),
under pytest-xdist too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.support import tiers
from tests.support.skipcheck import OPTION

REPO = Path(__file__).resolve().parents[3]
PLUGIN = ("-p", "tests.support.skipcheck")
# Reasons the real lists allow: "e2e" allows the real-node tier's, "gitops" none.
REAL_NODE_REASON = "the real-node tier runs with DEPLOYPLANE_E2E_REAL_NODE=1 (make e2e-real-node)"

PASSING = "def test_passes():\n    pass\n"


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*PLUGIN, *args)


def test_an_allowed_skip_is_listed_with_why_and_the_run_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a=PASSING
        + f"def test_other_tier():\n    import pytest\n    pytest.skip({REAL_NODE_REASON!r})\n"
    )
    result = _run(pytester, f"{OPTION}=e2e")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*skips, judged by the lists e2e*",
            f"*1 allowed: {REAL_NODE_REASON}",
            "*because the real-node tier's tests run in that tier*",
        ]
    )


def test_a_skip_outside_the_list_fails_the_run_naming_the_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_a=PASSING + "def test_tool():\n    import pytest\n    pytest.skip('no helm here')\n"
    )
    result = _run(pytester, f"{OPTION}=e2e")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*1 NOT ALLOWED: no helm here",
            "*test_a.py::test_tool",
            "FAILED on its skips: 1 skipped outside the allowed lists (e2e)",
        ]
    )


def test_a_reason_one_tier_allows_fails_another(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a=PASSING
        + f"def test_other_tier():\n    import pytest\n    pytest.skip({REAL_NODE_REASON!r})\n"
    )
    assert _run(pytester, f"{OPTION}=gitops").ret == pytest.ExitCode.TESTS_FAILED


def test_a_module_skipped_at_collection_counts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a=PASSING,
        test_b=(
            "import pytest\n"
            "pytest.skip('argocd is not built', allow_module_level=True)\n"
            "def test_never():\n    pass\n"
        ),
    )
    result = _run(pytester, f"{OPTION}=gitops")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*1 NOT ALLOWED: argocd is not built", "*test_b.py (at collection)"]
    )


def test_skips_by_mark_and_by_fixture_count(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a=(
            "import pytest\n"
            "pytestmark = pytest.mark.skipif(True, reason='the tools are missing')\n"
            "def test_one():\n    pass\n"
            "def test_two():\n    pass\n"
        ),
        test_b=(
            "import pytest\n"
            "@pytest.fixture\n"
            "def cluster():\n    pytest.skip('no cluster')\n"
            "def test_needs_it(cluster):\n    pass\n"
        )
        + PASSING,
    )
    result = _run(pytester, f"{OPTION}=gitops")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines_random(
        ["*2 NOT ALLOWED: the tools are missing", "*1 NOT ALLOWED: no cluster"]
    )


def test_a_run_that_skipped_everything_fails_even_when_every_skip_is_allowed(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_a=f"def test_other_tier():\n    import pytest\n    pytest.skip({REAL_NODE_REASON!r})\n"
    )
    result = _run(pytester, f"{OPTION}=e2e")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED on its skips: no test passed"])


def test_an_expected_failure_is_not_a_skip(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a=PASSING + "import pytest\n@pytest.mark.xfail\ndef test_x():\n    assert False\n"
    )
    result = _run(pytester, f"{OPTION}=gitops")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["nothing skipped"])


def test_a_failing_run_stays_failed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="def test_fails():\n    assert False\n" + PASSING)
    assert _run(pytester, f"{OPTION}=gitops").ret == pytest.ExitCode.TESTS_FAILED


def test_lists_add_up(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a=PASSING
        + "def test_build():\n    import pytest\n"
        + "    pytest.skip('image builds need root and buildah (Debian\\'s package)')\n"
    )
    assert _run(pytester, f"{OPTION}=unit").ret == pytest.ExitCode.TESTS_FAILED
    assert _run(pytester, f"{OPTION}=unit,without-real-node").ret == pytest.ExitCode.OK


def test_an_unknown_list_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a=PASSING)
    result = _run(pytester, f"{OPTION}=nightly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no list of allowed skips named 'nightly'*"])


def test_without_the_option_skips_are_pytests_business(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a=PASSING + "def test_tool():\n    import pytest\n    pytest.skip('no helm here')\n"
    )
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.OK
    assert "judged by the lists" not in result.stdout.str()


def test_under_xdist_the_controller_judges_every_workers_skips(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_a=PASSING,
        test_b=(
            "import pytest\n"
            "pytest.skip('argocd is not built', allow_module_level=True)\n"
            "def test_never():\n    pass\n"
        ),
        test_c=PASSING + "def test_tool():\n    import pytest\n    pytest.skip('no helm here')\n",
    )
    # Workers are processes of their own: they find the plugin on PYTHONPATH.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    result = pytester.runpytest_subprocess(*PLUGIN, "-n", "2", f"{OPTION}=gitops")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines_random(
        [
            "*1 NOT ALLOWED: argocd is not built",
            "*1 NOT ALLOWED: no helm here",
            "FAILED on its skips: 2 skipped outside the allowed lists (gitops)",
        ]
    )


def test_every_list_is_used_by_a_tier_of_make_test() -> None:
    text = (REPO / "Makefile").read_text() + (REPO / "tools" / "e2e-existing.sh").read_text()
    for name in tiers.SKIPS_ALLOWED:
        spellings = (f"$(SKIPS){name}", f"{OPTION}={name}", f"$(comma){name}")
        assert any(spelling in text for spelling in spellings), name
