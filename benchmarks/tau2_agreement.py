"""The τ² worlds against τ²-bench itself, and what they cost.

    python benchmarks/tau2_agreement.py            # agreement tables (τ²'s own evaluator on every case), figures
    python benchmarks/tau2_agreement.py --quick    # the agreement tables from the test's equivalent DB check only

Agreement: every task's gold actions through τ²'s environment and the Atoll world (tables and
answers compared), then the perturbed sequences of tests/worlds/test_tau2_agreement.py graded by
τ²'s EnvironmentEvaluator (the whole-database hash its reward uses), by the test's equivalent check
on the records either run touched, and by the Atoll suite, then generated sequences drawn as
tests/worlds/test_tau2_properties.py draws them, more of them (answers, records and verdicts
compared). Figures: instance creation and diff on the τ² fixtures beside the helpdesk ones, and the
replay of all 164 gold trajectories.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "worlds"))  # the agreement test's τ² loaders

import test_tau2_agreement as agreement  # noqa: E402
import test_tau2_properties as properties  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from atoll.worlds import get_world  # noqa: E402
from atoll.worlds._pool import ConnectionPool  # noqa: E402


def tau2_evaluator_match(case: agreement.Case, result: agreement.Replay) -> bool:
    """τ²'s own DB check: EnvironmentEvaluator.calculate_reward on the case's trajectory."""
    t = agreement.tau2_modules()
    trajectory = []
    for i, ((name, arguments), answer) in enumerate(zip(case.actions, result.tau2_answers, strict=True)):
        call = t.ToolCall(id=str(i), name=name, arguments=arguments, requestor="assistant")
        trajectory.append(t.AssistantMessage(role="assistant", tool_calls=[call]))
        trajectory.append(
            t.ToolMessage(id=str(i), role="tool", content=answer.content, requestor="assistant")
        )

    def environment(solo_mode: bool = False) -> object:
        return agreement.tau2_side(case.domain).environment

    reward = t.EnvironmentEvaluator.calculate_reward(environment, case.task, trajectory)
    return reward.db_check.db_match


def gold_table() -> Table:
    table = Table(title="Gold trajectories: τ²'s environment vs the Atoll world")
    for column in (
        "domain",
        "tasks",
        "tasks with equal tables",
        "calls",
        "equal answers",
        "of them τ² errors",
    ):
        table.add_column(column, justify="right" if column != "domain" else "left")
    for domain in agreement.DOMAINS:
        tasks = agreement.tau2_tasks(domain)
        equal_tables = calls = equal_answers = errors = 0
        for task in tasks:
            result = agreement.gold_replay(domain, task.id)
            equal_tables += not agreement.table_differences(domain, result)
            for message, record in zip(result.tau2_answers, result.atoll_results, strict=True):
                calls += 1
                same = agreement.same_answer(message, record)
                equal_answers += same
                errors += same and message.error
        table.add_row(domain, str(len(tasks)), str(equal_tables), str(calls), str(equal_answers), str(errors))
    return table


def perturbed_table(full: bool) -> tuple[Table, float]:
    cases = list(agreement.all_cases())
    started = time.perf_counter()
    verdicts = agreement.verdicts(cases)
    counts: Counter = Counter()
    for verdict in verdicts:
        key = (verdict.case.domain, verdict.case.kind)
        counts[key, "cases"] += 1
        counts[key, "τ² fails"] += not verdict.tau2
        counts[key, "agree"] += verdict.tau2 == verdict.atoll
        if full:
            result = (
                agreement.gold_replay(verdict.case.domain, verdict.case.task.id)
                if verdict.case.kind == "gold"
                else agreement.replay(verdict.case.domain, verdict.case.actions)
            )
            evaluator = tau2_evaluator_match(verdict.case, result)
            counts[key, "evaluator"] += evaluator == verdict.atoll
            counts[key, "check"] += evaluator == verdict.tau2
    seconds = time.perf_counter() - started
    columns = ["domain", "sequence", "cases", "τ² fails", "suite agrees with τ²'s check"]
    if full:
        columns += ["suite agrees with τ²'s evaluator", "test's check = τ²'s evaluator"]
    table = Table(title="Perturbed sequences: τ²'s DB check vs the Atoll suite's verdict")
    for column in columns:
        table.add_column(column, justify="left" if column in ("domain", "sequence") else "right")
    for domain, kind in dict.fromkeys(key for key, _ in counts):
        row = [domain, kind, *(str(counts[(domain, kind), name]) for name in ("cases", "τ² fails", "agree"))]
        if full:
            row += [str(counts[(domain, kind), "evaluator"]), str(counts[(domain, kind), "check"])]
        table.add_row(*row)
    return table, seconds


def generated_table(per_tool: int) -> Table:
    """The property test's sequences, `per_tool` of each tool and five times as many mixed ones per
    domain, drawn as the test draws them (the same seeds: the first ones are the test's)."""
    counts: Counter = Counter()

    def run(domain: str, tool: str | None, examples: int) -> None:
        @settings(properties.GENERATED, max_examples=examples)
        @given(data=st.data())
        def sample(data: st.DataObject) -> None:
            found = properties.compare(domain, *properties.draw_sequence(domain, data, tool))
            counts[domain, "sequences"] += 1
            counts[domain, "calls"] += found.calls
            counts[domain, "equal answers"] += found.calls - len(found.answers)
            counts[domain, "equal records"] += not found.tables
            counts[domain, "τ² fails the task"] += not found.tau2_passes
            counts[domain, "same verdict"] += found.tau2_passes == found.atoll_passes

        sample()

    columns = ["sequences", "calls", "equal answers", "equal records", "τ² fails the task", "same verdict"]
    table = Table(title="Generated sequences: τ²'s environment vs the Atoll world")
    table.add_column("domain")
    for column in columns:
        table.add_column(column, justify="right")
    for domain, tools in properties.TOOLS.items():
        run(domain, None, 5 * per_tool)
        for tool in tools:
            run(domain, tool, per_tool)
        table.add_row(domain, *(str(counts[domain, column]) for column in columns))
    return table


def _median_ms(action: Callable[[], object], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000


def creation_and_diff(
    world_name: str, fixture: str, first_table: str, episode: list[tuple[str, dict]]
) -> dict:
    """Medians: a cold instance (fresh connection, to its first query), a pooled one, and the diff after
    a short episode."""
    world = get_world(world_name)
    data = world.load_fixture(fixture)
    pool = ConnectionPool.of(data)

    def cold() -> None:
        instance = world.instance(fixture)
        instance.query(f'SELECT 1 FROM "{first_table}" LIMIT 1')
        instance.close()
        while pool.idle:
            pool.idle.pop().connection.close()

    def pooled() -> None:
        with world.instance(fixture) as instance:
            instance.query(f'SELECT 1 FROM "{first_table}" LIMIT 1')

    diffs = []
    for _ in range(40):
        with world.instance(fixture) as instance:
            for name, arguments in episode:
                assert instance.call(name, **arguments).ok, name
            started = time.perf_counter()
            assert not instance.diff().is_empty
            diffs.append(time.perf_counter() - started)
    return {
        "bytes": len(data.parts["main"]),
        "cold": _median_ms(cold, 200),
        "pooled": _median_ms(pooled, 200),
        "diff": statistics.median(diffs) * 1000,
    }


EPISODES = {
    ("helpdesk", "small_shop"): [
        ("add_order_note", {"order_id": "ORD-1001", "note": "Called about the delivery."}),
        ("issue_store_credit", {"customer_id": "CUS-0001", "amount": 10.0, "reason": "late delivery"}),
    ],
    ("helpdesk", "big_retailer"): [
        ("add_order_note", {"order_id": "ORD-1001", "note": "Called about the delivery."}),
        ("issue_store_credit", {"customer_id": "CUS-0001", "amount": 10.0, "reason": "late delivery"}),
    ],
    ("tau2_retail", "db"): [
        ("cancel_pending_order", {"order_id": "#W5918442", "reason": "no longer needed"}),
        (
            "modify_user_address",
            {
                **{"user_id": "noah_brown_6181", "address1": "1 Main St", "address2": ""},
                **{"city": "Austin", "state": "TX", "country": "USA", "zip": "78701"},
            },
        ),
    ],
    ("tau2_airline", "db"): [
        ("cancel_reservation", {"reservation_id": "4WQ150"}),
        ("send_certificate", {"user_id": "mia_li_3668", "amount": 100}),
    ],
}
FIRST_TABLE = {"helpdesk": "customers", "tau2_retail": "users", "tau2_airline": "users"}


def figures_table() -> Table:
    table = Table(title="World figures (medians)")
    for column in ("world / fixture", "size", "create cold", "create pooled", "diff after 2 writes"):
        table.add_column(column, justify="left" if column == "world / fixture" else "right")
    for (world_name, fixture), episode in EPISODES.items():
        found = creation_and_diff(world_name, fixture, FIRST_TABLE[world_name], episode)
        table.add_row(
            f"{world_name} / {fixture}",
            f"{found['bytes'] / 2**20:.2f} MiB",
            f"{found['cold']:.3f} ms",
            f"{found['pooled']:.3f} ms",
            f"{found['diff']:.3f} ms",
        )
    return table


def replay_seconds() -> tuple[float, float, int]:
    """All 164 gold trajectories replayed on fresh Atoll instances, then through τ²'s environment."""
    trajectories = [(domain, agreement.gold_actions(task)) for domain, task in agreement.gold_tasks()]
    for domain in agreement.DOMAINS:
        get_world(f"tau2_{domain}").load_fixture("db")
        agreement.pristine(domain)
    started = time.perf_counter()
    for domain, actions in trajectories:
        with get_world(f"tau2_{domain}").instance("db") as instance:
            for name, arguments in actions:
                instance.call(name, **arguments)
            instance.diff()
    atoll = time.perf_counter() - started
    t = agreement.tau2_modules()
    started = time.perf_counter()
    for domain, actions in trajectories:
        side = agreement.tau2_side(domain)
        for i, (name, arguments) in enumerate(actions):
            side.environment.get_response(t.ToolCall(id=str(i), name=name, arguments=arguments))
    tau2 = time.perf_counter() - started
    return atoll, tau2, len(trajectories)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip τ²'s whole-database evaluator (minutes)")
    parser.add_argument(
        "--generated", type=int, default=100, metavar="N", help="generated sequences per tool"
    )
    options = parser.parse_args()
    # τ²'s models warn when they dump a value stored as given ("2" in an int field), as in τ²'s own runs.
    warnings.filterwarnings("ignore", "Pydantic serializer warnings", UserWarning)
    console = Console()
    console.print(gold_table())
    table, seconds = perturbed_table(full=not options.quick)
    console.print(table)
    console.print(f"perturbed sequences graded in {seconds:.1f} s")
    started = time.perf_counter()
    console.print(generated_table(options.generated))
    console.print(f"generated sequences compared in {time.perf_counter() - started:.1f} s")
    console.print(figures_table())
    atoll, tau2, count = replay_seconds()
    console.print(
        f"replay of all {count} gold trajectories: Atoll {atoll:.2f} s (fresh instance each, with its diff); "
        f"τ²'s environment {tau2:.2f} s (on copy-on-read databases, no hash)"
    )


if __name__ == "__main__":
    main()
