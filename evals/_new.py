"""`optimize new suite WORLD`: a starter suite for any world, whose every task passes its own check.

The tasks are found by trying the world, not by knowing it: for each tool, arguments are filled from
the default fixture (a parameter named like a column takes that column's first value, `x_id` the key of
table `x`/`xs`, an enum its first accepted value) and the call is made on a fresh instance. A read
tool that answers becomes a lookup task; a write tool that changes something becomes a change task
whose reference is that call. Only calls that worked are written, so the suite loads and its
references replay on the first try; the comments say what to make of each task.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from atoll.worlds import World, get_world
from atoll.worlds.base.scaffold import Scaffold, project_at, project_root, write_new_folder

from ._locate import SUITES_DIR
from ._suite import SUITE_FILE, TASKS_DIR

SPLITS = ("train", "val", "test")
MAX_ENUM_VALUES = 6
MAX_CANDIDATES = 12
_SCALARS = {"integer": 1, "number": 1.0, "boolean": True, "string": "example"}


def new_suite(world_name: str, *, root: Path | None = None) -> Scaffold:
    """Scaffold `<suites>/<world>/` (suite.yaml and tasks/examples.yaml) for `world_name`, in the
    project's suites folder (atoll.toml `suites`), else `evals/`."""
    root = project_root(root)
    world = get_world(world_name, near=root)
    tasks = _probe_tasks(world)
    files = {
        SUITE_FILE: _suite_yaml(world, world_name),
        f"{TASKS_DIR}/examples.yaml": _tasks_yaml(world, tasks),
    }
    project = project_at(root)
    suites = project.suites_folder if project is not None and project.suites_folder else root / SUITES_DIR
    folder = suites / world.name
    return Scaffold(folder, write_new_folder(folder, files))


def _probe_tasks(world: World) -> list[dict[str, Any]]:
    """One task per tool whose call, with arguments found in the fixture, works on a fresh instance."""
    fixture = world.default_fixture
    with world.instance(fixture) as instance:
        samples = {table: instance.table_rows(table, limit=1) for table in world.tables}
    tasks = []
    for tool in world.tools.values():
        for arguments in _candidates(tool.parameters_schema(), samples):
            with world.instance(fixture) as instance:
                result = instance.call(tool.name, **arguments)
                changed = bool(instance.diff().tables)
            if result.ok and changed == tool.writes:
                break
        else:
            continue
        split = SPLITS[len(tasks) % len(SPLITS)]
        fact = None if tool.writes else _fact(result.value, arguments)
        tasks.append(
            {"tool": tool.name, "arguments": arguments, "writes": tool.writes, "split": split, "fact": fact}
        )
    return tasks


def _candidates(schema: dict[str, Any], samples: dict[str, list[dict[str, Any]]]) -> Iterator[dict[str, Any]]:
    """Arguments to try: a value for every required parameter, each enum's values in turn (a status
    tool refuses the status a row already has), none when a parameter has no value to offer."""
    properties = schema.get("properties", {})
    choices = []
    for name in schema.get("required", []):
        spec = properties.get(name, {})
        values = spec.get("enum") or [_value(name, spec, samples)]
        if values == [None]:
            return
        choices.append([(name, value) for value in values[:MAX_ENUM_VALUES]])
    for combination in itertools.islice(itertools.product(*choices), MAX_CANDIDATES):
        yield dict(combination)


def _value(name: str, spec: dict[str, Any], samples: dict[str, list[dict[str, Any]]]) -> Any:
    for rows in samples.values():
        if rows and rows[0].get(name) is not None:
            return rows[0][name]
    if name.endswith("_id"):
        stem = name.removesuffix("_id")
        for table in (stem, f"{stem}s", f"{stem}es"):
            rows = samples.get(table)
            if rows and rows[0].get("id") is not None:
                return rows[0]["id"]
        return None
    return _SCALARS.get(spec.get("type", "string"))


def _fact(value: Any, arguments: dict[str, Any]) -> str | None:
    """A text the lookup's answer holds and the request does not: what the agent's reply must say."""
    if not isinstance(value, dict):
        return None
    asked = {str(argument) for argument in arguments.values()}
    texts = [text for text in value.values() if isinstance(text, str) and text and text not in asked]
    worded = [text for text in texts if " " in text]  # a name or a subject reads better than an id
    return (worded or texts or [None])[0]


def _suite_yaml(world: World, named: str) -> str:
    return f"""\
# The eval suite of the {world.name} world. Atoll finds it for any harness of this world as
# evals/{world.name} (or name it in harness.yaml: `suite: path`). Tasks live in tasks/*.yaml.
# Check it with `optimize suite check`: every reference must pass at every seed,
# and it reports what a do-nothing agent scores and whether the val split is big enough to accept a
# better harness (aim for 10+ val tasks). See docs/graders.md for every field.
name: {json.dumps(world.name)}
world: {json.dumps(named)}
description: Starter tasks for {world.name}; replace them with what your users really ask.
default_seeds: [0, 1, 2]   # each task runs once per seed; pass^k needs every seed to pass
pass_threshold: 1.0        # an episode passes when every check passes
"""


def _tasks_yaml(world: World, tasks: list[dict[str, Any]]) -> str:
    lines = [
        f"# Starter tasks, one per {world.name} tool that worked on the default fixture with arguments",
        "# taken from it. Rewrite each user message as a real request, and make each task check what must",
        "# change (inserted/updated/deleted) and what must be said (reply_contains): a task that only",
        "# checks `unchanged` or `no_other_writes` is passed by an agent that does nothing.",
        "",
    ]
    if not tasks:
        lines.append("# No tool worked with arguments found in the fixture: write the first task by hand.")
        lines.append("[]")
    for task in tasks:
        lines += _task_lines(world, task)
    return "\n".join(lines) + "\n"


def _task_lines(world: World, task: dict[str, Any]) -> list[str]:
    tool, arguments = task["tool"], task["arguments"]
    call = json.dumps(arguments, ensure_ascii=False)
    said = ", ".join(f"{name} {value}" for name, value in arguments.items())
    request = f"Please {tool.replace('_', ' ')}" + (f" for {said}" if said else "") + "."
    lines = [
        f"- id: {tool.replace('_', '-')}",
        f"  split: {task['split']}",
        f"  fixture: {json.dumps(world.default_fixture)}",
        f"  tags: [{'change' if task['writes'] else 'lookup'}]",
        "  user:",
        f"    message: {json.dumps(request, ensure_ascii=False)}",
        "  reference:  # what a careful agent does; replayed by `optimize suite check`",
        f"    - {tool}: {call}",
        "  expect:",
    ]
    if task["writes"]:
        lines += [
            "    matches_reference: true   # the same rows changed as the reference changed",
            "    no_other_writes: true     # and nothing else",
        ]
    else:
        lines.append(f"    unchanged: [{', '.join(world.tables)}]   # a lookup changes nothing")
        if task["fact"]:
            lines.append(
                f"    reply_contains: [{json.dumps(task['fact'], ensure_ascii=False)}]   # the answer"
            )
        else:
            lines.append("    # also check the answer: reply_contains: [a fact the lookup returns]")
    return [*lines, ""]
