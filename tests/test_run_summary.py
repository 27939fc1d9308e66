"""`optimize run`'s closing summary: tables on a terminal, plain lines in a log (`optimize run … | cat`, CI).

Rich takes 80 columns where stdout is not a terminal, and the nine-column proposals table squeezed every
rationale into a 12-character column there, a dozen lines each; a log gets one line of figures per
proposal, its rationale and reasons whole beneath it.
"""

from __future__ import annotations

import io

from rich.console import Console

from atoll.optimizer import OptimizeResult, StepRecord
from atoll.views.optimize import print_optimize_result

RATIONALE = (
    "Add a rule to the prompt: confirm the order id with the customer before refunding, since three failing "
    "train episodes refunded the wrong order"
)


def result(proposals: int = 12) -> OptimizeResult:
    steps = [
        StepRecord(
            iteration=n,
            operator="reflect" if n % 2 else "prompt_cut",
            rationale=f"{RATIONALE} (proposal {n + 1})",
            verdict="accept" if n == 3 else "reject",
            incumbent_score=0.5,
            candidate_score=0.55 if n == 3 else 0.45,
            p_value=0.01 if n == 3 else 0.6,
            lower_bound=0.02 if n == 3 else -0.08,
            commit="0123456789abcdef" if n == 3 else None,
            reasons=[] if n == 3 else [f"the lower bound -0.080 is below the minimum effect 0.000 (n={n})"],
        )
        for n in range(proposals)
    ]
    return OptimizeResult(
        run_id="run-1",
        status="finished",
        stop_reason="max proposals",
        start_hash="a" * 12,
        final_hash="b" * 12,
        val_start=0.5,
        val_final=0.55,
        test_start=0.48,
        test_final=0.53,
        steps=steps,
        final_patch="--- a/prompts/agent.md\n+++ b/prompts/agent.md\n@@ -1 +1,2 @@\n You help.\n+Confirm first.\n",
    )


def printed(*, terminal: bool) -> str:
    console = Console(
        file=io.StringIO(), force_terminal=terminal, color_system=None, width=200 if terminal else None
    )
    print_optimize_result(console, result())
    return console.file.getvalue()


def test_a_log_gets_one_line_per_proposal_with_its_rationale_and_reasons_whole() -> None:
    log = printed(terminal=False)
    lines = log.splitlines()
    for n in range(12):
        assert f"     {RATIONALE} (proposal {n + 1})" in lines
    assert "  4. reflect · accept · 0.500 → 0.550 · p 0.01 · lower bound +0.020 · commit 0123456789" in lines
    assert "     why not: the lower bound -0.080 is below the minimum effect 0.000 (n=11)" in lines
    assert "  val (gate): 0.500 → 0.550" in lines and "+Confirm first." in lines
    assert not any(ch in log for ch in "┃│┏━")  # no table
    assert len(lines) < 12 * 3 + 15, log  # the table wrapped each rationale over a dozen lines


def test_a_terminal_still_gets_the_tables() -> None:
    shown = printed(terminal=True)
    assert "Proposals" in shown and "│" in shown and "rationale (and why it was not kept)" in shown
