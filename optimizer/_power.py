"""Can the gate's tests ever fail a change on a split, and can a run's val split accept anything?

The acceptance rule's power (`acceptance_power`) is worked out in `worlds.base.stats`, below evals,
because the suite check reports it too; this module adds the CI gate's (`regression_power`) and reads
both off a run's or a gate's configuration. Every figure comes from the rules themselves run on
constructed scores, never from a formula of ours.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from atoll.evals import load_suite, suite_for
from atoll.harnesses import load_harness
from atoll.worlds import AtollError
from atoll.worlds.base.stats import GateRule, SplitPower, acceptance_power, sign_test_needs

if TYPE_CHECKING:
    from ._config import OptimizeConfig
    from ._gate import GateConfig


class GatePower(BaseModel):
    """Which of the CI gate's tests can fail a change on a split (the gate's rule is `gate`)."""

    split: str
    tasks: int
    k: int = Field(description="Seeds per task (the fewest any task of the split runs).")
    alpha: float
    tolerance: float
    sign_test_needs: int = Field(
        description="Fewest tasks that must get worse, none better, for the sign test for losses to fire."
    )
    always_passed_check: bool = Field(
        description="Whether k is enough seeds for the always-passed check to fire at all."
    )
    verdict: Literal["ok", "weak"] = Field(
        description="weak: the sign test for losses can never fire on this many tasks."
    )
    message: str


def regression_power(
    tasks: int, k: int = 1, rule: GateRule | None = None, *, split: str = "val"
) -> GatePower:
    """Whether the gate's sign test for losses can fire on `tasks` tasks, and what guards a change if not.

    The gate is a non-inferiority rule: its bootstrap bound fails a change that drops the mean by
    more than the tolerance on any split size, so it is never blind; on too few tasks it loses the
    sign test, the leg that catches a change worse on many tasks by a little each.
    """
    rule = rule or GateRule()
    needs = sign_test_needs(rule.alpha)
    always = k >= rule.always_passed_min_seeds
    weak = tasks < needs
    head = f"gate on the {split} split: {tasks} task(s) x {k} seed(s)"
    if weak:
        guards = f"the {rule.confidence:.0%} lower bound of the mean change (tolerance {rule.tolerance:g})"
        guards += " and the always-passed check" if always else ""
        off = (
            ""
            if always
            else f" (the always-passed check needs {rule.always_passed_min_seeds}+ seeds per task, -k)"
        )
        message = (
            f"{head}: its sign test for losses can never fail a change (it needs {needs} tasks worse and "
            f"none better, alpha {rule.alpha:g}); only {guards} can{off}. Grow {split} to at least {needs} tasks."
        )
    else:
        message = f"{head}: the sign test for losses fires once {needs} tasks are worse and none better."
    return GatePower(
        split=split,
        tasks=tasks,
        k=k,
        alpha=rule.alpha,
        tolerance=rule.tolerance,
        sign_test_needs=needs,
        always_passed_check=always,
        verdict="weak" if weak else "ok",
        message=message,
    )


def run_power(config: OptimizeConfig) -> SplitPower | None:
    """The acceptance power of the val split `optimize run` decides on with `config`.

    None when the harness or the suite does not load: the run itself then says why, in its words.
    """
    try:
        suite = load_suite(config.suite or suite_for(load_harness(config.harness)))
    except AtollError:
        return None
    return acceptance_power(len(suite.select(split="val")), config.k, config.rule)


def gate_power(config: GateConfig) -> GatePower | None:
    """What can fail a change on the split `optimize gate` judges with `config`.

    None when the harness or the suite does not load, or the split is empty: the gate then says why.
    """
    try:
        suite = load_suite(config.suite or suite_for(load_harness(config.harness)))
    except AtollError:
        return None
    chosen = suite.select(split=config.split)
    if not chosen:
        return None
    k = min(len(suite.seeds(task, k=config.k)) for task in chosen)
    return regression_power(len(chosen), k, config.rule(suite.pass_threshold), split=config.split)
