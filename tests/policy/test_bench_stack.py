"""The pack benchmark's stack (``bench/policy_bench.py``) is the corpus renamed apart: judged
in one AnalyzeStack, each copy of each case draws exactly its own expected (policy, resource)
pairs, so the benchmark times the pack on a stack whose resources do not cross-link (the
verdicts a real stack of that size would draw), and a renaming that broke a case, or left two
cases sharing a name that links them, fails here."""

from __future__ import annotations

from bench.policy_bench import big_stack
from tests.policy.corpus import cases, expected
from tests.policy.policy_stacks import found


def _expected(copies: int) -> set[tuple[str, str]]:
    return {
        (policy, f"c{copy}{shape}{index}-{name}")
        for copy in range(copies)
        for index, case in enumerate(cases())
        for shape in ("p", "l")
        for policy, name in expected(case, "model-serving")
    }


def test_bench_stack_draws_each_cases_own_verdicts(local_pack):
    resources = big_stack(1)
    assert len({r.urn for r in resources}) == len(resources)
    assert found(local_pack.analyze(resources), level="mandatory") == _expected(1)
