"""Which proposer a slot asks, and the first new proposal it gets.

Proposers are tried in a Thompson-sampling order (this run's verdicts over the stored record of past
runs on the harness); a proposal whose files repeat the incumbent, the start or an earlier proposal of
the run uses no slot, and a proposer that only repeats is asked again with fresh randomness a bounded
number of times. Every draw is seeded by (run seed, iteration, ask), so a resumed run makes the same
choices and lands on the same proposal.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

from atoll.harnesses import Harness, content_hash
from atoll.harnesses.models import Model, ModelError, ModelUsage, ResponseCache, check_model, get_model

from ._bandit import PAST_WEIGHT, Bandit, Counts, tally
from ._config import OptimizeConfig, OptimizerError, OptimizerPaused
from ._optimizations import OptimizationStore
from ._proposal import Attempt, Proposal, ProposalContext, Proposer
from ._registry import check_proposer, make_operators

REASKS = 2  # how often, in one proposal slot, a proposer that repeated an earlier proposal is asked again
NOTHING_NEW = ("none", "duplicate")  # verdicts of a slot in which no proposer had new files to try


def configured_proposers(config: OptimizeConfig, agent_model: Model) -> list[Proposer]:
    """The operators `config` names (its objective's defaults when it names none) and, unless
    `config.proposer` is off, the model-driven proposers first: asking `config.proposer_model`, else the
    agent's own model."""
    operators = make_operators(config.operators, objective=config.objective, models=bool(config.models))
    if config.proposer == "off":
        model_driven: list[Proposer] = []
    else:
        model = agent_model
        if config.proposer_model:
            check_model(config.proposer_model)
            model = get_model(config.proposer_model, cache=ResponseCache.default())
        if config.proposer == "rewrite":
            from ._llm_proposer import LLMProposer

            model_driven = [LLMProposer(model)]
        else:
            from ._reflect import reflective_proposers

            model_driven = list(reflective_proposers(model))
    proposers = [*model_driven, *operators]
    if not proposers:
        raise OptimizerError("no proposers: name at least one operator or turn --proposer on")
    return proposers


class Proposing:
    """The proposers of run `run_id` and the record they are ordered by.

    Args:
        start: the run's start harness (its name keys the past record; a proposal of its files repeats).
        usage: the run's model usage, which every proposer's spend is added to.
        on_repeat: told, in words, of each repeat passed over.
    """

    def __init__(
        self,
        run_id: str,
        proposers: list[Proposer],
        optimizations: OptimizationStore,
        start: Harness,
        harness_path: Path,
        *,
        seed: int,
        usage: Callable[[ModelUsage], None],
        on_repeat: Callable[[str], None],
        on_attempt: Callable[[int, Attempt], None] | None = None,
    ) -> None:
        for proposer in proposers:
            check_proposer(proposer)
        self.run_id, self.proposers, self.optimizations = run_id, proposers, optimizations
        self.start, self.harness_path, self.seed = start, harness_path, seed
        self.usage, self.on_repeat, self.on_attempt = usage, on_repeat, on_attempt

    async def next(
        self, iteration: int, context: ProposalContext, incumbent: Harness, *, operators_first: bool = False
    ) -> tuple[Proposal | None, list[tuple[Proposal, str]]]:
        """A proposal whose files are new, and the repeats passed over on the way, each with what it repeats.

        Proposers are asked in `order`. A model-driven proposer's new proposal is taken at once. The
        LLM-free operators cost nothing to ask, so all of them are, and of their new proposals the one aimed
        at the most failing train tasks is taken (the bandit's order breaks ties): on the 1.5B model one
        failure pattern, replies made without any lookup, was in most failing episodes, and the operator
        aimed at it waited eleven slots behind the bandit's draws. A repeat uses no proposal slot: those
        that repeated are asked again with fresh randomness, REASKS times at most, so a proposer that only
        repeats itself cannot hold the run."""
        repeats: list[tuple[Proposal, str]] = []
        proposers = self.order(iteration, operators_first=operators_first)
        for ask in range(REASKS + 1):
            if ask:
                rng = random.Random(f"{self.seed}:{iteration}:ask{ask}")
                context = context.model_copy(update={"rng": rng})
            repeated, fresh = [], []
            for proposer in proposers:
                drives_model = getattr(proposer, "drives_model", False)
                if fresh and drives_model:
                    break  # the operators asked first had something new: no model call this slot
                proposal = await self.ask(proposer, context)
                if proposal is None:
                    continue
                what = self.repeat_of(content_hash(proposal.files), incumbent, iteration)
                if what is None:
                    if drives_model:
                        return proposal, repeats
                    fresh.append(proposal)
                    continue
                repeats.append((proposal, what))
                repeated.append(proposer)
                again = f"; asked again, {ask + 1} of {REASKS + 1} times" if ask else ""
                self.on_repeat(f"duplicate, not counted: {proposal.operator} proposed {what}{again}")
            if fresh:
                return max(fresh, key=lambda proposal: len(proposal.targets)), repeats
            proposers = repeated
        return None, repeats

    async def ask(self, proposer: Proposer, context: ProposalContext) -> Proposal | None:
        """One proposer's candidate; its model spend counts toward the budgets, its outage pauses."""
        before = proposer.usage.model_copy()
        try:
            proposal = await proposer.propose(context)
            attempt = getattr(proposer, "last_attempt", None)
            if isinstance(attempt, Attempt) and self.on_attempt is not None:
                self.on_attempt(context.iteration, attempt)
            return proposal
        except ModelError as error:
            raise OptimizerPaused(
                f"the proposer model stopped answering ({error}); the run is saved, resume it with "
                f"`optimize run {self.harness_path} --resume {self.run_id}`"
            ) from None
        finally:
            self.usage(proposer.usage - before)

    def repeat_of(self, candidate_hash: str, incumbent: Harness, iteration: int) -> str | None:
        """What a candidate with these files repeats, in words (the incumbent, the start, an earlier
        proposal of this run); None when its files are new."""
        if candidate_hash == incumbent.hash:
            return "no change from the incumbent"
        if candidate_hash == self.start.hash:
            return "the start harness again"
        row = self.tried(iteration).get(candidate_hash)
        return f"the same files as proposal {row['iteration'] + 1} ({row['verdict']})" if row else None

    def tried(self, iteration: int) -> dict[str, dict[str, Any]]:
        """The candidates this run tried before `iteration` (a slot with nothing new tried none), by hash."""
        return {
            row["candidate_hash"]: row
            for row in reversed(self.optimizations.proposal_rows(self.run_id))
            if row["iteration"] < iteration and row["verdict"] not in (None, *NOTHING_NEW)
        }

    def order(self, iteration: int, *, operators_first: bool = False) -> list[Proposer]:
        """The proposers to try in turn: Thompson sampling on this run's verdicts before `iteration` over
        the stored priors, drawn with the iteration's own seed, so a resume makes the same choice.
        `operators_first` (a repair's first try) puts the LLM-free operators first whatever the iteration:
        each is aimed at the tasks the vetoed winner broke, and the slot takes the one aimed at most."""
        bandit = Bandit([proposer.name for proposer in self.proposers], self.priors)
        for row in self.optimizations.proposal_rows(self.run_id):
            if row["iteration"] < iteration:
                bandit.record(row["operator"], row["verdict"])
        draw = random.Random(f"{self.seed}:{iteration}:bandit")
        rank = {name: i for i, name in enumerate(bandit.order(draw))}
        ordered = sorted(self.proposers, key=lambda proposer: rank[proposer.name])
        # Model-driven proposers lead every other slot: among a score of operators the bandit alone would
        # rarely reach them in a short run, and their edits are the ones operators cannot make.
        model_driven = [p for p in ordered if getattr(p, "drives_model", False)]
        others = [p for p in ordered if not getattr(p, "drives_model", False)]
        return [*model_driven, *others] if iteration % 2 and not operators_first else [*others, *model_driven]

    @cached_property
    def priors(self) -> Counts:
        """Past runs' record per operator on this harness, read at the first proposal and stored with
        the run, so a resumed run draws from the same priors whatever ran in between."""
        stored = (self.optimizations.run(self.run_id) or {}).get("operator_priors")
        if stored:
            return {name: (wins, losses) for name, (wins, losses) in json.loads(stored).items()}
        priors = tally(self.optimizations.past_verdicts(self.start.name, exclude=self.run_id), PAST_WEIGHT)
        self.optimizations.update_run(self.run_id, operator_priors=json.dumps(priors))
        return priors
