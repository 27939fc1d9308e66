"""The live line of a run: its phase, an ETA worked out from its budget and pace, and the best candidate."""

from __future__ import annotations

import asyncio
from pathlib import Path

from notes_desk import DoesNothing, Helpful, agent, make_workspace

from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.optimizer import OptimizeConfig, OptimizerEvent, optimize
from atoll.views.optimize import event_line, status_line


def test_the_line_moves_through_the_phases_and_names_the_best_candidate(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "repo", prompt="You keep notes on orders.\n", val=list(range(7, 13)))
    events: list[OptimizerEvent] = []
    store = RunStore(tmp_path / "runs.sqlite")
    config = OptimizeConfig(harness=root / "h", suite=root / "s", max_proposals=2, max_minutes=30)
    try:
        asyncio.run(
            optimize(
                config,
                store=store,
                model=ScriptedModel(fn=agent),
                proposers=[DoesNothing(), Helpful()],
                on_event=events.append,
            )
        )
    finally:
        store.close()

    phases = list(dict.fromkeys(event.status.phase for event in events))
    assert phases == ["start", "search", "done"]  # this suite has no test split to score
    searching = [e.status for e in events if e.status.phase == "search"]
    assert all(status.eta_s is not None and status.eta_s <= 30 * 60 + 60 for status in searching)
    decided = next(e for e in events if e.decision is not None)
    assert decided.status.best.startswith("proposal 2 (helpful): +")
    assert "6 better / 0 worse, accept" in decided.status.best
    assert "best: proposal 2 (helpful)" in status_line(events[-1].status)
    assert status_line(events[0].status).startswith("scoring the start · ETA")
    assert "searching · ETA" in event_line(decided)
