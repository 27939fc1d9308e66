"""The optimization loop: propose, screen, confirm against the incumbent, commit only real wins.

Each iteration draws its randomness from (run seed, iteration) and names every evaluation by
(run, role, harness hash), so a resumed run regenerates the same proposal and finds the
episodes it already ran in the store instead of running them again.

The loop decides; its helpers each keep one part of a run: `Evaluations` (_evaluations.py) plays and
keeps the batches, `Proposing` (_proposing.py) gets each slot's new proposal, the screen races a
candidate (_screen.py) and `Commits` (_commits.py) puts what is accepted into git.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable
from typing import Any

from atoll.evals import (
    BatchProgress,
    BatchResult,
    RunStore,
    Suite,
    load_suite,
    suite_for,
)
from atoll.evals.metrics import EpisodeOutcome
from atoll.harnesses import Harness, HarnessError, content_hash, load_harness
from atoll.harnesses.models import Model, ModelUsage, ResponseCache, check_model, get_model, resolve_model
from atoll.worlds.base import new_run_id
from atoll.worlds.base.stats import TIE_TOLERANCE, Decision, PairedScores, decide, futility, passes

from . import git
from ._commits import Commits
from ._config import (
    OptimizeConfig,
    OptimizerError,
    OptimizeResult,
    OptimizerEvent,
    OptimizerPaused,
    OptimizerStatus,
)
from ._evaluations import Evaluations
from ._objective import (
    PairedCosts,
    decide_objective,
    load_decision,
    spend_per_episode,
    spent,
)
from ._optimizations import OptimizationStore
from ._proposal import (
    Attempt,
    FailureReport,
    Proposal,
    ProposalContext,
    Proposer,
    held_out_leak,
    unified_patch,
)
from ._proposing import NOTHING_NEW, Proposing, configured_proposers
from ._repair import Repairs
from ._screen import CostRace, Repair, ScreenRecord, race, race_order
from ._strategy import STRATEGIES, ParentStrategy

OnEvent = Callable[[OptimizerEvent], None]


def new_optimization_id() -> str:
    return new_run_id("opt")


def _mean(scores: dict[str, list[float | None]]) -> float | None:
    per_task = [sum(s or 0.0 for s in values) / len(values) for values in scores.values() if values]
    return sum(per_task) / len(per_task) if per_task else None


def _failure_report(result: Any, suite: Suite) -> FailureReport:
    episode = result.episode
    lines = []
    for event in episode.events:
        if event.kind in ("user", "assistant", "thought", "return"):
            lines.append(f"[{event.agent}] {event.kind}: {event.content}")
        elif event.kind == "tool_call":
            lines.append(f"[{event.agent}] call {event.tool} {json.dumps(event.arguments, default=str)}")
        elif event.kind == "tool_result":
            body = event.result if event.ok else event.error
            lines.append(f"[{event.agent}] result: {json.dumps(body, default=str)[:300]}")
        elif event.kind == "error":
            lines.append(f"[{event.agent}] error: {event.content}")
    return FailureReport(
        task_id=result.task_id,
        score=result.score,
        user_message=suite.task(result.task_id).user.message,
        transcript="\n".join(lines),
        diff=json.dumps(episode.diff.summary()),
        feedback=[check.line() for check in result.grade.failed_checks] or [episode.error or "no feedback"],
        patterns=episode.patterns,
    )


class Optimization:
    """One optimization run. Use `optimize()` rather than this class directly."""

    def __init__(
        self,
        config: OptimizeConfig,
        store: RunStore,
        on_event: OnEvent | None,
        run_id: str,
        proposers: list[Proposer] | None = None,
        model: Model | None = None,
        start_hash: str | None = None,
        strategy: ParentStrategy | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.optimizations = OptimizationStore(store)
        self.on_event = on_event
        self.id = run_id
        self.harness_path = config.harness
        on_disk = load_harness(config.harness)
        # Resumed after an accept, the folder holds the accepted variant: the start is the snapshot.
        if start_hash is not None and start_hash != on_disk.hash:
            files = store.harness_files(start_hash)
            self.start = Harness.from_files(files, source=str(config.harness), world=on_disk.world)
        else:
            self.start = on_disk
        self.world = self.start.world
        self.suite = load_suite(config.suite or suite_for(self.start))
        if self.suite.world.name != self.world.name:
            raise OptimizerError(
                f"harness {self.start.name!r} drives world {self.world.name!r} but suite {self.suite.name!r} "
                f"tests {self.suite.world.name!r}"
            )
        for split in ("train", "val"):
            if not self.suite.select(split=split):
                raise OptimizerError(
                    f"suite {self.suite.name!r} has no {split} tasks; the optimizer needs both"
                )
        if model is None:
            model_name = resolve_model(config.model, self.start.config.model)
            check_model(model_name)
            model = get_model(model_name, cache=ResponseCache.default())
        self.model: Model = model
        for name in config.models or []:  # a model the search may choose must be usable before it starts
            check_model(name)
        self.strategy = strategy or STRATEGIES[config.strategy]
        self.status = OptimizerStatus(run_id=run_id, max_proposals=config.max_proposals)
        self.started = time.monotonic()
        self._plan: dict[str, float] = {}  # what the ETA is worked out from: episode_s, step_s, test_s
        self._batch_pace_s: float | None = None
        self._batch_left = 0
        self._best_gain: float | None = None
        self._phases: dict[str, float] = {}
        self.evaluations = Evaluations(
            run_id,
            config,
            self.suite,
            model,
            store,
            config.harness,
            on_start=lambda stage: self._emit("evaluate", stage=stage, batch_done=0, batch_total=0),
            on_progress=self._on_progress,
        )
        self.proposing = Proposing(
            run_id,
            proposers if proposers is not None else configured_proposers(config, model),
            self.optimizations,
            self.start,
            config.harness,
            seed=config.seed,
            usage=self._add_usage,
            on_repeat=lambda line: self._emit("decision", stage=line),
            on_attempt=self._attempted,
        )
        self.commits = Commits(run_id, config, self.optimizations)

    # -- events ---------------------------------------------------------------------------------

    def _emit(self, kind: str, decision: Decision | None = None, **status: Any) -> None:
        for key, value in status.items():
            setattr(self.status, key, value)
        self.status.elapsed_s = time.monotonic() - self.started
        self.status.eta_s = self._eta()
        if self.on_event is not None:
            self.on_event(OptimizerEvent(kind=kind, status=self.status.model_copy(), decision=decision))

    def _add_usage(self, usage: ModelUsage) -> None:
        self.status.usage += usage

    def _attempted(self, iteration: int, attempt: Attempt) -> None:
        """Store what a model-driven proposer's ask came to; say so when it came to nothing."""
        self.optimizations.save_attempt(self.id, iteration, attempt)
        if attempt.outcome != "proposed":
            what = attempt.outcome.replace("_", " ")
            self._emit(
                "decision", stage=f"{attempt.operator}: {what} ({attempt.detail}); the next proposer is asked"
            )

    def _on_progress(self, progress: BatchProgress) -> None:
        if progress.kind == "episode" and progress.last is not None:
            usage = progress.last.episode.usage
            self.status.episodes += 1
            self.status.usage += usage
        fresh = progress.done - progress.resumed - progress.reused
        if fresh > 0:
            self._batch_pace_s = progress.elapsed_s / fresh
        self._batch_left = progress.total - progress.done
        self._emit("progress", batch_done=progress.done, batch_total=progress.total)

    def _eta(self) -> float | None:
        """Seconds until the run ends: the batch under way, the search the budget and the proposals left
        allow, and the closing test scoring; None before any episode has shown a pace."""
        plan, s = self._plan, self.status
        pace = self._batch_pace_s or plan.get("episode_s")
        if pace is None:
            return None
        left = self._batch_left * pace
        if s.phase in ("start", "search"):
            proposals_left = max(0, self.config.max_proposals - s.iteration)
            search = proposals_left * plan.get("step_s", 0.0)
            if self.config.max_minutes is not None:
                search = min(search, max(0.0, self.config.max_minutes * 60 - s.elapsed_s))
            left += search + plan.get("test_s", 0.0)
        return left

    # -- budget ---------------------------------------------------------------------------------

    def _out_of_budget(self, next_step_s: float = 0.0, reserve_s: float = 0.0) -> str | None:
        """Why no further proposal should start, or None. The time budget also counts what the
        next proposal and the closing test scoring are expected to take, so a run ends on time."""
        c, s = self.config, self.status
        elapsed = time.monotonic() - self.started
        if c.max_minutes is not None and elapsed < c.max_minutes * 60 <= elapsed + next_step_s + reserve_s:
            return (
                f"time budget: {c.max_minutes:g} min would not fit another proposal "
                f"(~{next_step_s / 60:.1f} min) and the closing test scoring (~{reserve_s / 60:.1f} min)"
            )
        minutes = elapsed / 60
        checks = [
            (c.max_episodes, s.episodes, "episode budget"),
            (c.max_model_calls, s.usage.model_calls, "model-call budget"),
            (c.max_cost_usd, s.usage.cost_usd, "cost budget"),
            (c.max_minutes, minutes, "time budget"),
        ]
        for limit, used, name in checks:
            if limit is not None and used >= limit:
                return f"{name} spent ({used:.4g} of {limit})"
        return None

    # -- the loop -------------------------------------------------------------------------------

    async def run(self, *, resuming: bool) -> OptimizeResult:
        config = self.config
        rows = (
            {row["iteration"]: row for row in self.optimizations.proposal_rows(self.id)} if resuming else {}
        )
        incumbent = self.start
        if resuming:
            incumbent = self.commits.replay_accepted(rows, self.start, self.store.harness_files, self.world)
        self._emit("start", stage="baseline", incumbent_hash=incumbent.hash)
        start_val = await self.evaluations.val(self.start)
        val_s = self.evaluations.seconds(start_val, len(start_val.results))
        incumbent_val = await self.evaluations.val(incumbent)
        self._emit(
            "evaluate", start_score=_mean(start_val.scores()), incumbent_score=_mean(incumbent_val.scores())
        )
        scores_test = config.score_test and self._has_test()
        test_s = (
            self.evaluations.seconds(start_val, len(self.suite.select(split="test")) * config.k)
            if scores_test
            else 0.0
        )
        self._plan = {
            "episode_s": self.evaluations.seconds(start_val, 1),
            "step_s": val_s / 2,
            "test_s": test_s,
        }
        self._batch_left, self._batch_pace_s = 0, None
        self._phase_ends("start")
        self.status.phase = "search"
        longest_step_s = 0.0
        pool: list[tuple[Harness, BatchResult]] = []
        decided = [rows[i]["verdict"] for i in sorted(rows) if rows[i]["verdict"] is not None]
        accepted_at = max((i for i, verdict in enumerate(decided) if verdict == "accept"), default=-1)
        rejections_in_a_row = len(decided) - accepted_at - 1  # patience carries over a resume
        stop_reason = "proposal budget spent"
        self.status.accepted = sum(1 for r in rows.values() if r["verdict"] == "accept")
        self.status.rejected = sum(
            1 for r in rows.values() if r["verdict"] not in ("accept", None, *NOTHING_NEW)
        )
        repairs = Repairs()
        repairs.replay([rows[i] for i in sorted(rows)])
        for iteration in range(config.max_proposals):
            row = rows.get(iteration)
            if row is not None and row["verdict"] is not None:
                continue  # decided before the run was interrupted
            # Before any proposal has run, guess one costs half a val evaluation (most are screened out).
            # The closing test scoring: the start's, and the final's once a variant has been accepted.
            budget = self._out_of_budget(
                longest_step_s or val_s / 2, test_s * (2 if self.status.accepted else 1)
            )
            if budget:
                stop_reason = budget
                break
            if config.patience and rejections_in_a_row >= config.patience:
                stop_reason = f"{rejections_in_a_row} proposals in a row rejected (patience)"
                break
            rng = random.Random(f"{config.seed}:{iteration}")
            repairing = repairs.take()
            parent = (
                self._stored_harness(repairing)
                if repairing
                else self.strategy.choose((incumbent, incumbent_val), pool, rng)
            )
            began, trained = time.monotonic(), self.evaluations.train_seconds
            # A repair's tries but the last ask the LLM-free operators first (aimed at what the winner broke);
            # its last the proposers in their usual turn, so the model-driven one is still asked.
            verdict, candidate, candidate_val = await self._iteration(
                iteration, rng, parent, incumbent, incumbent_val, operators_first=repairs.operators_first
            )
            if repairs.after(verdict, *self._stored_decision(iteration)):
                self._emit(
                    "decision",
                    stage=f"the next {repairs.tries} proposals start from proposal {iteration + 1}, to repair "
                    "the tasks it broke (it is still judged against the incumbent)",
                )
            step_s = time.monotonic() - began - (self.evaluations.train_seconds - trained)
            longest_step_s = max(longest_step_s, step_s)
            self._plan["step_s"] = longest_step_s
            if verdict == "accept":
                incumbent, incumbent_val = candidate, candidate_val
                rejections_in_a_row = 0
                self._emit(
                    "commit", incumbent_hash=incumbent.hash, incumbent_score=_mean(incumbent_val.scores())
                )
            else:
                rejections_in_a_row += 1
                if candidate is not None and candidate_val is not None:
                    pool.append((candidate, candidate_val))
        test_start = test_final = None
        self._phase_ends("search")
        self.status.phase = "test"
        self._plan["step_s"] = 0.0
        if scores_test:  # only now, for the report: nothing accepted, the start's test score is the final's
            test_start = await self.evaluations.evaluate(self.start, "test", split="test", k=config.k)
            test_final = test_start
            if incumbent.hash != self.start.hash:
                test_final = await self.evaluations.evaluate(incumbent, "test", split="test", k=config.k)
        self._phase_ends("test")
        return self._result(
            "finished", stop_reason, incumbent, start_val, incumbent_val, test_start, test_final
        )

    def _phase_ends(self, phase: str) -> None:
        """Note the wall minutes `phase` took, from the end of the one before (for the result)."""
        now = (time.monotonic() - self.started) / 60
        self._phases[phase] = round(now - sum(self._phases.values()), 2)

    async def _regressions(self, parent: Harness, incumbent: Harness) -> list[Any]:
        """The parent's failing train episodes on tasks where it scored below the incumbent, in the sample
        and outside it: the train tasks a vetoed winner broke, which a repair should read (val stays unseen)."""
        return [
            result
            for theirs, ours in await self._both_on_train(parent, incumbent)
            for result in theirs.failures()
            if result.score < _task_mean(ours.scores().get(result.task_id, [0.0]))
        ]

    async def _broken_elsewhere(self, parent: Harness, incumbent: Harness) -> dict[str, list[float | None]]:
        """The parent's scores on the train tasks outside the sample where it scored below the incumbent."""
        pairs = (await self._both_on_train(parent, incumbent))[1:]
        return {
            task: scores
            for theirs, ours in pairs
            for task, scores in theirs.scores().items()
            if _task_mean(scores) < _task_mean(ours.scores()[task]) - TIE_TOLERANCE
        }

    async def _repair(self, candidate: Harness, parent: Harness, incumbent: Harness) -> Repair:
        """What a repair candidate is raced with: its parent's sample scores, and the candidate played on the
        train tasks outside the sample that its parent broke, with how many of them it mended."""
        broken = await self._broken_elsewhere(parent, incumbent)
        mended = 0
        if broken:
            batch = await self.evaluations.evaluate(candidate, "mend", tasks=sorted(broken), k=1)
            mended = sum(
                _task_mean(scores) > _task_mean(broken[task]) + TIE_TOLERANCE
                for task, scores in batch.scores().items()
            )
        parent_train = await self.evaluations.train(parent)
        return Repair(parent_train.scores(), broken=len(broken), mended=mended)

    async def _both_on_train(
        self, parent: Harness, incumbent: Harness
    ) -> list[tuple[BatchResult, BatchResult]]:
        """The parent's and the incumbent's batches on the train sample, then on the rest of train.

        A winner is vetoed for tasks it broke on val, which the search never sees; the train tasks it broke
        are what a repair can be told of and raced on. On the 1.5B model made to call first, the sample of
        16 held one of them, and a demo swap that went on to mend a vetoed refusal played all 16 as its
        parent did. The rest of train is played once per harness, so once per link of a repair chain (31
        tasks: about 2 minutes for an agent that answers straight away, 7 for one that acts); its passing
        episodes are also a repair's demo sources."""
        pairs = [(await self.evaluations.train(parent), await self.evaluations.train(incumbent))]
        rest = await self.evaluations.rest_of_train(parent)
        if rest is not None:
            pairs.append((rest, await self.evaluations.rest_of_train(incumbent)))
        return pairs

    def _stored_decision(self, iteration: int) -> tuple[Any, str | None]:
        """The gate's decision on proposal `iteration` as stored (None if it never reached the gate), and
        its candidate's hash."""
        row = next(
            (r for r in self.optimizations.proposal_rows(self.id) if r["iteration"] == iteration), None
        )
        if row is None:
            return None, None
        judged = row["verdict"] in ("accept", "reject", "void") and row["decision"]
        return (load_decision(row["decision"]) if judged else None), row["candidate_hash"]

    def _stored_harness(self, harness_hash: str) -> Harness:
        """A harness this run stored, loaded: a candidate a later proposal starts from."""
        files = self.store.harness_files(harness_hash)
        return Harness.from_files(files, source=f"{self.harness_path} (candidate)", world=self.world)

    def _has_test(self) -> bool:
        return bool(self.suite.select(split="test"))

    async def _iteration(
        self,
        iteration: int,
        rng: random.Random,
        parent: Harness,
        incumbent: Harness,
        incumbent_val: BatchResult,
        *,
        operators_first: bool = False,
    ) -> tuple[str, Harness | None, BatchResult | None]:
        self._emit("proposal", stage="proposing", iteration=iteration + 1, operator=None, rationale=None)
        parent_train = await self.evaluations.train(parent)
        failures = parent_train.failures()
        passing = [r for r in parent_train.results if r.passed]
        repairing = parent.hash != incumbent.hash
        if repairing:  # what the parent broke is what to mend first; what it passes anywhere, a demo source
            failures = await self._regressions(parent, incumbent) or failures
            rest = await self.evaluations.rest_of_train(parent)
            passing += [r for r in rest.results if r.passed] if rest else []
        context = ProposalContext(
            files=parent.files(),
            harness_hash=parent.hash,
            harness=parent,
            failures=[_failure_report(r, self.suite) for r in failures],
            passing_episodes=passing,
            train_tasks=[self.suite.task(task) for task in self.evaluations.train_tasks],
            world_tools=list(self.world.tools),
            rng=rng,
            iteration=iteration,
            objective=self.config.objective,
            models=self.config.models or [],
            agent_model=self.model.name,
            tried=frozenset(self.proposing.tried(iteration)),
        )
        proposal, repeats = await self.proposing.next(
            iteration, context, incumbent, operators_first=operators_first
        )
        if proposal is None:
            return self._nothing_new(iteration, repeats)
        self._emit("proposal", operator=proposal.operator, rationale=proposal.rationale)
        step = {
            "operator": proposal.operator,
            "rationale": proposal.rationale,
            "patch": proposal.patch,
            "parent_hash": parent.hash,
            "incumbent_hash": incumbent.hash,
            "candidate_hash": content_hash(proposal.files),  # kept for invalid ones too: a repeat is told
        }
        try:
            candidate = Harness.from_files(
                proposal.files, source=f"{self.harness_path} (candidate)", world=self.world
            )
        except HarnessError as error:
            return self._invalid(iteration, str(error), **step)
        if candidate.config.world != self.start.config.world:  # a world name is a module to import
            return self._invalid(iteration, "a proposal may not change the harness's world", **step)
        if candidate.config.suite != self.start.config.suite:  # nor choose what grades it
            return self._invalid(iteration, "a proposal may not change the harness's suite", **step)
        held_out = {task.id: task.user.message for task in self.suite.tasks if task.split != "train"}
        leak = held_out_leak(candidate.demos, parent.demos, held_out)
        if leak:  # proposers never see val or test; this catches one that found them elsewhere
            return self._invalid(iteration, leak, **step)
        self.store.save_harness(candidate.hash, candidate.name, candidate.files())
        self.optimizations.save_step(self.id, iteration, **step)
        try:  # a template can pass the load check and still fail on a real task's context
            # A repair aims at the tasks its parent broke, where it is behind the incumbent until mended
            # whole: raced on them first, it would fall behind in round one. It is raced in the usual order,
            # and an early tie does not stop it; playing the whole sample as its parent did, and mending
            # none of the tasks its parent broke outside it, does (see race).
            targets = [] if repairing else proposal.targets
            repair = await self._repair(candidate, parent, incumbent) if repairing else None
            screen = await self._screen(candidate, incumbent, iteration, targets, repair)
            self.optimizations.save_step(self.id, iteration, screen=screen)
            if not screen.passed:
                self.optimizations.save_step(self.id, iteration, verdict="screened_out")
                return self._rejected("screened_out", screen.reason)
            self._emit("screen", stage="confirming on the val split")
            candidate_val, stopped = await self._confirm_on_val(candidate, incumbent_val)
        except HarnessError as error:
            return self._invalid(iteration, str(error))
        played = {result.task_id for result in candidate_val.results}
        incumbent_evidence = [o for o in _outcomes(incumbent_val) if o.task_id in played]
        candidate_evidence = _outcomes(candidate_val)
        decision = self._decide(incumbent_evidence, candidate_evidence)
        if stopped:  # a partial val batch decides nothing but that the candidate is out
            decision = decision.model_copy(
                update={"verdict": "reject", "reasons": [stopped, *decision.reasons]}
            )
            candidate_val = None  # nor is it a full val record a parent could be chosen by
        broken = self._unconfirmed_breaks(decision) if decision.accepted else []
        if broken:
            incumbent_evidence, candidate_evidence = await self._confirm(
                iteration, broken, (incumbent, incumbent_evidence), (candidate, candidate_evidence)
            )
            decision = self._decide(incumbent_evidence, candidate_evidence)
        self.optimizations.save_step(self.id, iteration, decision=decision, verdict=decision.verdict)
        self._note_best(iteration, proposal.operator, decision)
        self._emit("decision", decision=decision, stage=decision.verdict)
        if not decision.accepted:
            self.status.rejected += 1
            return decision.verdict, candidate, candidate_val
        self.commits.commit(iteration, proposal, decision, candidate)
        self.status.accepted += 1
        return "accept", candidate, candidate_val

    async def _confirm_on_val(
        self, candidate: Harness, incumbent_val: BatchResult
    ) -> tuple[BatchResult, str | None]:
        """The candidate on the val split, in looks when the run raises quality (see `futility`): its val
        batch, whole or as far as it got, and why it stopped early (None when it played every task)."""
        looks = self.config.val_looks if self.config.objective == "quality" else 1
        incumbent = incumbent_val.scores()
        order = sorted(incumbent)
        random.Random(f"{self.config.seed}:val-order").shuffle(order)

        def stop(played: BatchResult, left: list[str]) -> str | None:
            candidate = played.scores()
            seen = PairedScores(incumbent={task: incumbent[task] for task in candidate}, candidate=candidate)
            return futility(seen, {task: incumbent[task] for task in left}, self.config.rule)

        val, stopped = await self.evaluations.val_in_looks(candidate, order, looks, stop)
        if stopped:
            self._emit("screen", stage=f"stopped on val: {stopped}")
        return val, stopped

    def _note_best(self, iteration: int, operator: str, decision: Decision) -> None:
        """Keep, in words, the candidate with the largest mean gain the gate has seen so far."""
        comparison = decision.comparison
        if self._best_gain is not None and comparison.mean_delta <= self._best_gain:
            return
        self._best_gain = comparison.mean_delta
        played = comparison.wins + comparison.losses + comparison.ties
        self.status.best = (
            f"proposal {iteration + 1} ({operator}): {comparison.mean_delta:+.3f} on {played} val tasks, "
            f"{comparison.wins} better / {comparison.losses} worse, {decision.verdict}"
        )

    def _spend(self, *batches: BatchResult | None) -> dict[str, Any]:
        """The objective per episode at the start and the end, on val and test, for a run that lowers one."""
        objective = self.config.objective
        if objective == "quality":
            return {}
        fields = ("val_spend_start", "val_spend_final", "test_spend_start", "test_spend_final")
        return {"objective": objective} | {
            name: spend_per_episode(_outcomes(batch), objective) if batch else None
            for name, batch in zip(fields, batches, strict=True)
        }

    def _decide(self, incumbent: list[EpisodeOutcome], candidate: list[EpisodeOutcome]) -> Decision:
        """The acceptance rule of the run's objective on both sides' val episodes."""
        scores = PairedScores.from_outcomes(incumbent, candidate)
        if self.config.objective == "quality":
            return decide(scores, self.config.rule)
        costs = PairedCosts.from_outcomes(incumbent, candidate, self.config.objective)
        return decide_objective(scores, costs, self.config.objective_rule)

    def _unconfirmed_breaks(self, decision: Decision) -> list[str]:
        """Tasks the incumbent passed on every seed and the candidate failed on one, on too few seeds for
        the always-passed veto to judge (at k=1 it cannot see a task that broke)."""
        if not self.config.confirm_k:
            return []
        rule = self.config.rule if self.config.objective == "quality" else self.config.objective_rule
        if self.config.confirm_k < rule.always_passed_min_seeds:
            return []
        scores, threshold = decision.scores, rule.pass_threshold
        return [
            task
            for task in scores.tasks
            if len(scores.incumbent[task]) < rule.always_passed_min_seeds
            and all(score is not None and passes(score, threshold) for score in scores.incumbent[task])
            and not all(score is not None and passes(score, threshold) for score in scores.candidate[task])
        ]

    async def _confirm(
        self,
        iteration: int,
        tasks: list[str],
        *sides: tuple[Harness, list[EpisodeOutcome]],
    ) -> list[list[EpisodeOutcome]]:
        """Both sides' evidence with `tasks` run on `confirm_k` seeds (their first seeds are the val batch's, so
        those episodes are reused): a few episodes, spent only on a variant about to be kept."""
        self._emit(
            "screen",
            stage=f"confirming {len(tasks)} task(s) the incumbent passed, {self.config.confirm_k} seeds",
        )
        confirmed = []
        for harness, evidence in sides:
            batch = await self.evaluations.evaluate(
                harness, "confirm", key=str(iteration), tasks=tasks, k=self.config.confirm_k
            )
            confirmed.append([o for o in evidence if o.task_id not in tasks] + _outcomes(batch))
        return confirmed

    def _nothing_new(self, iteration: int, repeats: list[tuple[Proposal, str]]) -> tuple[str, None, None]:
        """Record a slot in which no proposer had anything new: it is spent, and says why."""
        if not repeats:
            why = "no proposer had anything to try"
            self.optimizations.save_step(self.id, iteration, operator="none", rationale=why, verdict="none")
            self._emit("decision", stage=f"none: {why}")
            return "none", None, None
        first = repeats[0][0]
        reasons = list(dict.fromkeys(f"{proposal.operator}: {what}" for proposal, what in repeats))
        self.optimizations.save_step(
            self.id,
            iteration,
            operator=first.operator,
            rationale=first.rationale,
            patch=first.patch,
            verdict="duplicate",
            decision=json.dumps({"repeats": reasons}),
        )
        self._emit(
            "decision",
            stage=f"duplicate: the proposers only repeated earlier proposals ({len(repeats)} repeats); "
            f"proposal {iteration + 1} of {self.config.max_proposals} is spent",
        )
        return "duplicate", None, None

    def _invalid(self, iteration: int, error: str, **step: Any) -> tuple[str, None, None]:
        """A candidate that does not load or render: recorded with its error and skipped, so a
        resumed run never replays it."""
        self.optimizations.save_step(
            self.id, iteration, **step, verdict="invalid", decision=json.dumps({"error": error})
        )
        return self._rejected("invalid")

    def _rejected(self, verdict: str, why: str = "") -> tuple[str, None, None]:
        self.status.rejected += 1
        self._emit("decision", stage=f"{verdict}: {why}" if why else verdict)
        return verdict, None, None

    async def _screen(
        self,
        candidate: Harness,
        incumbent: Harness,
        iteration: int,
        targets: list[str],
        repair: Repair | None = None,
    ) -> ScreenRecord:
        """Race the candidate against the incumbent's train episodes (see _screen.py). Only the
        candidate runs, one batch of new train tasks per round, each batch an evaluation of its own
        key, so a resumed run finds the rounds it already ran and reaches the same decision. `repair`:
        what a repair is raced with."""
        incumbent_train = await self.evaluations.train(incumbent)
        failing = [r.task_id for r in incumbent_train.failures()]
        passing = [r.task_id for r in incumbent_train.results if r.passed]
        rng = random.Random(f"{self.config.seed}:{iteration}:screen")
        order = race_order(failing, passing, rng, targets)
        objective = self.config.objective
        costs = (
            None
            if objective == "quality"
            else CostRace(
                objective=objective,
                incumbent=spent(_outcomes(incumbent_train), objective),
                tolerance=self.config.objective_rule.tolerance,
            )
        )

        async def evaluate(tasks: list[str]) -> dict[str, list[float | None]]:
            key = hashlib.sha256(",".join(sorted(tasks)).encode()).hexdigest()[:8]
            batch = await self.evaluations.evaluate(candidate, "screen", key=key, tasks=tasks, k=1)
            if costs is not None:
                costs.candidate.update(spent(_outcomes(batch), costs.objective))
            return batch.scores()

        def announce(line: str) -> None:
            self._emit("screen", stage=line)

        return await race(
            order,
            incumbent_train.scores(),
            evaluate,
            first=self.config.screen_size,
            announce=announce,
            costs=costs,
            repair=repair,
        )

    def _result(
        self,
        status: str,
        stop_reason: str,
        incumbent: Harness,
        start_val: BatchResult,
        incumbent_val: BatchResult,
        test_start: BatchResult | None,
        test_final: BatchResult | None,
    ) -> OptimizeResult:
        steps = self.optimizations.proposals(self.id)
        s = self.status
        return OptimizeResult(
            run_id=self.id,
            status=status,
            stop_reason=stop_reason,
            start_hash=self.start.hash,
            final_hash=incumbent.hash,
            val_start=_mean(start_val.scores()),
            val_final=_mean(incumbent_val.scores()),
            test_start=test_start.metrics.mean_score if test_start else None,
            test_final=test_final.metrics.mean_score if test_final else None,
            **self._spend(start_val, incumbent_val, test_start, test_final),
            steps=steps,
            attempts=self.optimizations.attempts(self.id),
            phase_minutes=dict(self._phases),
            final_patch=unified_patch(self.start.files(), incumbent.files()),
            episodes=s.episodes,
            usage=s.usage,
            elapsed_s=time.monotonic() - self.started,
        )


async def optimize(
    config: OptimizeConfig,
    *,
    on_event: OnEvent | None = None,
    resume: str | None = None,
    store: RunStore | None = None,
    proposers: list[Proposer] | None = None,
    model: Model | None = None,
    strategy: ParentStrategy | None = None,
) -> OptimizeResult:
    """Improve `config.harness` against its suite; commit every variant that passes the acceptance rule.

    Args:
        config: what to optimize and how (see OptimizeConfig).
        on_event: called with an OptimizerEvent at every step: progress for a live view.
        resume: the id of an interrupted run to continue (its stored config is used).
        store: the runs store; default `$ATOLL_RUNS_DB`, else runs/atoll.sqlite.
        proposers: your own Proposer objects instead of the ones `config` names.
        strategy: your own ParentStrategy instead of the one `config.strategy` names.
        model: a Model object for the agent (a ScriptedModel in tests) instead of `config.model`.
    """
    store = store or RunStore()
    optimizations = OptimizationStore(store)
    if resume is not None:
        latest = resume in ("latest", "last")
        run_id = optimizations.latest_unfinished() if latest else optimizations.resolve(resume)
        row = optimizations.run(run_id) if run_id else None
        if row is None:
            raise OptimizerError(
                f"no unfinished optimization run to resume in {store.path}"
                if latest
                else f"no optimization run {resume!r} in {store.path}"
            )
        config = OptimizeConfig.model_validate_json(row["config"])
    else:
        run_id = new_optimization_id()
        _check_clean(config)
    start_hash = row["start_hash"] if resume is not None else None
    optimization = Optimization(config, store, on_event, run_id, proposers, model, start_hash, strategy)
    if resume is None:
        optimizations.create(
            run_id,
            config,
            harness=optimization.start.name,
            model=optimization.model.name,
            start_hash=optimization.start.hash,
        )
    else:
        optimizations.update_run(run_id, status="running", finished_at=None)
    try:
        result = await optimization.run(resuming=resume is not None)
    except OptimizerPaused as pause:
        optimizations.finish(run_id, "paused", str(pause), None)
        optimization._emit("paused", stage="paused", message=str(pause))
        raise
    except Exception as error:
        optimizations.finish(run_id, "failed", f"{type(error).__name__}: {error}", None)
        raise
    except BaseException:  # Ctrl-C, cancellation: resumable
        optimizations.finish(run_id, "interrupted", "interrupted", None)
        raise
    optimizations.finish(run_id, "finished", result.stop_reason, result)
    optimization.status.phase = "done"
    optimization._emit("finish", stage="finished", message=result.stop_reason)
    return result


def _check_clean(config: OptimizeConfig) -> None:
    """Refuse to start where an accepted variant could not be committed cleanly."""
    if not config.commit:
        return
    try:
        dirty = git.dirty_files(config.harness)
    except git.NotARepository:
        raise OptimizerError(
            f"{config.harness} is not in a git repository; run `git init` and commit it, "
            "or pass --no-commit to only write accepted variants"
        ) from None
    try:
        git.check_identity(config.harness)
    except git.GitError:
        raise OptimizerError(
            "git has no author identity to commit accepted variants with: run "
            "`git config user.name 'Your Name'` and `git config user.email you@example.com`, or pass --no-commit"
        ) from None
    if dirty:
        raise OptimizerError(
            f"{config.harness} has uncommitted changes ({', '.join(dirty[:5])}); commit or stash them first, "
            "so every accepted variant is one clean commit"
        )


def _task_mean(scores: list[float | None]) -> float:
    return sum(score or 0.0 for score in scores) / len(scores) if scores else 0.0


def _outcomes(batch: BatchResult) -> list[EpisodeOutcome]:
    return [result.outcome() for result in batch.results]
