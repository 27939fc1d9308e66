"""Extension points: operators from a package outside the repository, and a parent strategy of one's own."""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path

import pytest
from notes_desk import MAGIC, PROMPT, agent, make_workspace

import atoll.optimizer._registry as registry
from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import (
    Greedy,
    OptimizeConfig,
    OptimizerError,
    make_operators,
    operator_names,
    optimize,
    register_operator,
)

PLUGIN = '''
from atoll.optimizer import Operator, Proposal


class SayMagic(Operator):
    """Writes the line that makes the test agent work: a team's own operator."""

    name = "say_magic"

    async def propose(self, context):
        files = {**context.files, "prompts/desk.md.j2": context.files["prompts/desk.md.j2"] + "MAGIC\\n"}
        return Proposal.build(operator=self.name, rationale="say it", parent=context.files, files=files,
                              parent_hash=context.harness_hash)
'''


def install(site: Path, name: str, entry_points: str, module: str = "") -> None:
    """A distribution as pip would leave it: a module and a dist-info with its entry points."""
    if module:
        (site / f"{name}.py").write_text(module)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\n{entry_points}\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "site-packages"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    yield folder
    sys.modules.pop("atoll_team_ops", None)


def test_an_installed_package_adds_an_operator_that_a_run_can_name_and_commit(
    site: Path, tmp_path: Path
) -> None:
    install(site, "atoll_team_ops", "say_magic = atoll_team_ops:SayMagic", PLUGIN.replace("MAGIC", MAGIC))
    assert operator_names()[-1] == "say_magic" and "add_demo" in operator_names()

    root = make_workspace(tmp_path / "repo", prompt="You keep notes on orders.\n", val=list(range(7, 13)))
    config = OptimizeConfig(
        harness=root / "h", suite=root / "s", operators=["say_magic"], max_proposals=1, max_minutes=None
    )
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        result = asyncio.run(optimize(config, store=store, model=ScriptedModel(fn=agent)))
    finally:
        store.close()
    assert [(s.operator, s.verdict) for s in result.steps] == [("say_magic", "accept")]
    assert MAGIC in (root / "h" / PROMPT).read_text()


def test_a_broken_or_clashing_plug_in_is_named_with_its_entry_point(site: Path) -> None:
    install(site, "atoll_broken", "oops = atoll_missing_module:Thing")
    assert "oops" not in [operator.name for operator in make_operators()], (
        "a default run never imports plug-ins"
    )
    with pytest.raises(OptimizerError, match=r"plug-in 'oops' \(atoll_missing_module:Thing\) does not load"):
        make_operators(["oops"])


def test_an_operator_name_clashing_with_atolls_own_is_refused(site: Path) -> None:
    install(site, "atoll_clash", "add_demo = optimizer:AddRule")
    with pytest.raises(OptimizerError, match=r"plug-in 'add_demo' .* clashes"):
        operator_names()
    with pytest.raises(OptimizerError, match="one of Atoll's own"):
        register_operator("add_rule", Greedy)


def test_a_registered_factory_must_make_a_proposer_of_that_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_registered", {})
    register_operator("greedy_by_mistake", Greedy)
    with pytest.raises(OptimizerError, match=r"not a Proposer named 'greedy_by_mistake'"):
        make_operators(["greedy_by_mistake"])
    with pytest.raises(OptimizerError, match=r"unknown operator\(s\) nope; operators: .*add_demo"):
        make_operators(["nope"])


def test_a_proposer_that_declares_no_usage_is_refused_before_the_run_starts(tmp_path: Path) -> None:
    class NoUsage:
        name = "no_usage"

        async def propose(self, context):
            return None

    root = make_workspace(tmp_path / "repo", prompt="You keep notes on orders.\n", val=list(range(7, 13)))
    config = OptimizeConfig(harness=root / "h", suite=root / "s", max_proposals=1, max_minutes=None)
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        with pytest.raises(OptimizerError, match="declares no `usage`.*subclass optimizer.Operator"):
            asyncio.run(optimize(config, store=store, model=ScriptedModel(fn=agent), proposers=[NoUsage()]))
    finally:
        store.close()


def test_a_parent_strategy_of_ones_own_is_asked_for_every_proposal(tmp_path: Path) -> None:
    from notes_desk import DoesNothing

    asked = []

    class Counting(Greedy):
        name = "counting"

        def choose(self, incumbent, pool, rng):
            asked.append(len(pool))
            return super().choose(incumbent, pool, rng)

    root = make_workspace(tmp_path / "repo", prompt="You keep notes on orders.\n", val=list(range(7, 13)))
    config = OptimizeConfig(harness=root / "h", suite=root / "s", max_proposals=2, max_minutes=None)
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        asyncio.run(
            optimize(
                config,
                store=store,
                model=ScriptedModel(fn=agent),
                proposers=[DoesNothing()],
                strategy=Counting(),
            )
        )
    finally:
        store.close()
    assert asked == [0, 0]


def test_a_run_that_lowers_cost_uses_the_cost_levers_and_can_name_any_lever() -> None:
    quality = {operator.name for operator in make_operators()}
    cheaper = {operator.name for operator in make_operators(objective="tokens")}
    # What an agent reads is both: fewer tokens, and on a small model fewer fields to read out or misread.
    assert "trim_max_tokens" in cheaper and quality & cheaper == {"project_results"}
    assert [operator.name for operator in make_operators(["trim_turns", "add_rule"])] == [
        "trim_turns",
        "add_rule",
    ]
    assert "choose_model" in {operator.name for operator in make_operators(objective="tokens", models=True)}
    assert "choose_model" not in cheaper
