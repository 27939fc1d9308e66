"""Which proposal a slot takes: of the LLM-free operators' new proposals, the one aimed at the most failing
train tasks, whatever order the bandit drew; a model-driven proposer's is taken as soon as it is asked."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from notes_desk import PROMPT, agent, make_workspace

from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import Operator, OptimizeConfig, Proposal, ProposalContext, optimize


class Line(Operator):
    """Appends its own line; `aimed` says it aims at every failing train task."""

    def __init__(self, name: str, aimed: bool = False) -> None:
        self.name, self.aimed = name, aimed

    async def propose(self, context: ProposalContext) -> Proposal | None:
        files = {**context.files, PROMPT: context.files[PROMPT] + f"{self.name}\n"}
        proposal = Proposal.build(
            operator=self.name,
            rationale=self.name,
            parent=context.files,
            files=files,
            parent_hash=context.harness_hash,
        )
        if proposal is not None and self.aimed:
            proposal.targets = [failure.task_id for failure in context.failures]
        return proposal


class Asked(Line):
    drives_model = True


@pytest.mark.parametrize("seed", range(4))
def test_the_operator_aimed_at_the_most_failures_goes_first_whatever_the_draw(
    tmp_path: Path, seed: int
) -> None:
    first = propose(tmp_path, [Line("plain"), Line("other"), Line("aimed", aimed=True)], seed)
    assert first == "aimed"


def test_model_driven_proposers_lead_every_other_slot(tmp_path: Path) -> None:
    operators = [Line("plain", aimed=True), Asked("asked")]
    assert propose(tmp_path, operators, 0, proposals=2) == ["plain", "asked"]


def propose(tmp_path: Path, proposers: list[Operator], seed: int, proposals: int = 1):
    root = make_workspace(tmp_path / f"repo{seed}", prompt="You keep notes.\n", val=[11, 12])
    store = RunStore(tmp_path / f"runs{seed}.sqlite")
    config = OptimizeConfig(
        harness=root / "h",
        suite=root / "s",
        max_proposals=proposals,
        max_minutes=None,
        score_test=False,
        seed=seed,
    )
    try:
        result = asyncio.run(
            optimize(config, store=store, model=ScriptedModel(fn=agent), proposers=proposers)
        )
    finally:
        store.close()
    operators = [step.operator for step in result.steps]
    return operators[0] if proposals == 1 else operators


def test_a_preconditions_guard_aims_at_the_failures_that_skipped_the_step_it_requires() -> None:
    from atoll.optimizer._operators._settings import _skipped_a_step

    requires = {"desk": {"get_order": "verify_identity"}}
    skipped = '[desk] user: hi\n[desk] call get_order {"order_id": "ORD-1"}\n[desk] result: {}'
    assert _skipped_a_step(skipped, requires)
    assert not _skipped_a_step('[desk] call verify_identity {"pin": "1"}\n' + skipped, requires)
    assert not _skipped_a_step(skipped.replace("[desk]", "[other]"), requires)  # another agent's calls


def test_a_repair_slot_asks_the_operators_first_whatever_the_iteration(tmp_path: Path) -> None:
    """The operators aim at the tasks the vetoed winner broke; an odd slot is otherwise the model's."""
    from atoll.harnesses import load_harness
    from atoll.optimizer._optimizations import OptimizationStore
    from atoll.optimizer._proposing import Proposing

    root = make_workspace(tmp_path / "repo", prompt="You keep notes.\n", val=[11])
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        proposing = Proposing(
            "run-1",
            [Line("plain"), Asked("asked")],
            OptimizationStore(store),
            load_harness(root / "h"),
            root / "h",
            seed=0,
            usage=lambda usage: None,
            on_repeat=lambda words: None,
        )
        proposing.priors = {}  # no past runs (the cached property reads them from a stored run)
        assert [p.name for p in proposing.order(1)] == ["asked", "plain"]
        assert [p.name for p in proposing.order(1, operators_first=True)] == ["plain", "asked"]
    finally:
        store.close()
