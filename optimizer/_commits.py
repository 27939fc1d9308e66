"""Accepted variants into git: one commit per variant, its message carrying the figures that decided it.

A step is marked committed only after git has the commit, and the commit carries the run's and the
candidate's trailers, so a run resumed after a crash between the decision and the commit finds the
commit (or makes it) instead of making it twice.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from atoll.harnesses import Harness
from atoll.worlds import World
from atoll.worlds.base import now_text
from atoll.worlds.base.stats import Decision

from . import git
from ._config import OptimizeConfig
from ._objective import ObjectiveDecision, load_decision, objective_figures
from ._optimizations import OptimizationStore
from ._proposal import Proposal


def commit_message(
    proposal: Proposal, decision: Decision, run_id: str, iteration: int, k: int, harness_hash: str
) -> str:
    """The commit message of an accepted variant: what changed, why, and the figures that decided it."""
    c = decision.comparison
    rule = decision.rule
    headline = proposal.rationale.split("\n")[0]
    if isinstance(decision, ObjectiveDecision):  # quality held, the objective lowered: both figures
        bound = f"lower bound {c.lower_bound:+.3f} >= {-decision.rule.tolerance or 0.0:+g} (tolerance {decision.rule.tolerance:g})"
        evidence = f"{bound}\nObjective: {objective_figures(decision.objective, decision.rule)}"
    else:
        evidence = f"lower bound {c.lower_bound:+.3f} > min effect {rule.min_effect}"
    return (
        f"atoll({proposal.operator}): {headline[:72]}\n\n"
        f"{proposal.rationale}\n\n"
        f"Gate (val split, {len(c.deltas)} tasks x {k} seed(s), paired): "
        f"{c.incumbent_mean:.3f} -> {c.candidate_mean:.3f} ({c.mean_delta:+.3f})\n"
        f"Sign test p={c.p_better:.4g} ({c.wins} tasks better, {c.losses} worse, {c.ties} tied); "
        f"bootstrap {rule.confidence:.0%} {evidence} "
        f"({rule.resamples} resamples, seed {rule.seed})\n\n"
        f"Atoll-Run: {run_id}\nAtoll-Iteration: {iteration}\nAtoll-Operator: {proposal.operator}\n"
        f"Atoll-Harness: {harness_hash}\n"
    )


class Commits:
    """Where run `run_id` writes and commits what it accepts: the harness folder, on `config.branch`."""

    def __init__(self, run_id: str, config: OptimizeConfig, optimizations: OptimizationStore) -> None:
        self.run_id, self.config, self.optimizations = run_id, config, optimizations
        self.path: Path = config.harness

    def commit(self, iteration: int, proposal: Proposal, decision: Decision, candidate: Harness) -> None:
        """Write and commit an accepted variant; the step is marked committed only after git has it.

        Idempotent for a resumed run: a commit already carrying this run's trailer for the
        candidate is found and recorded instead of made twice.
        """
        path, branch = self.path, self.config.branch
        sha = None
        if not self.config.commit:
            candidate.write(path)
        else:
            trailers = [f"Atoll-Run: {self.run_id}", f"Atoll-Harness: {candidate.hash}"]
            sha = git.find_commit(path, trailers, ref=branch or "HEAD")
            if sha is None:
                message = commit_message(
                    proposal, decision, self.run_id, iteration, self.config.k, candidate.hash
                )
                if branch is None or branch == git.current_branch(path):
                    candidate.write(path)
                    sha = git.commit_folder(path, message)
                else:
                    sha = git.commit_folder(path, message, branch=branch, files=candidate.files())
        self.optimizations.save_step(
            self.run_id, iteration, commit_sha=sha or "uncommitted", decided_at=now_text()
        )
        self.optimizations.update_run(self.run_id, incumbent_hash=candidate.hash)

    def replay_accepted(
        self,
        rows: dict[int, dict[str, Any]],
        start: Harness,
        files_of: Callable[[str], dict[str, str]],
        world: World,
    ) -> Harness:
        """The incumbent a resumed run starts from: the last accepted variant, committed now if a
        crash came between the decision and the commit. `files_of` reads a harness's files by hash."""
        incumbent = start
        for iteration in sorted(rows):
            row = rows[iteration]
            if row["verdict"] != "accept":
                continue
            files = files_of(row["candidate_hash"])
            incumbent = Harness.from_files(files, source=str(self.path), world=world)
            if not row["commit_sha"]:
                decision = load_decision(row["decision"])
                proposal = Proposal(
                    operator=row["operator"],
                    rationale=row["rationale"],
                    files=files,
                    parent_hash=row["parent_hash"],
                    patch=row["patch"],
                )
                self.commit(iteration, proposal, decision, incumbent)
        return incumbent
