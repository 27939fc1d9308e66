"""The file-format pages cannot drift from the code: docs/harness.md and docs/graders.md.

Each page shows complete example files, each fenced block headed by `<!-- file: PATH -->`. Here
they are written into a folder and loaded with the real loaders (`load_harness`, `load_suite`), so
an example that no longer loads fails. Every field of the pydantic models behind those files, found
by walking the models, must also be named in an inline code span of its page (`field`, `x.field`,
`{field: …}`), so a new field without documentation fails too.
"""

from __future__ import annotations

import asyncio
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from atoll.evals import (
    Check,
    Grade,
    Matcher,
    ReferenceCall,
    SuiteConfig,
    Task,
    grade_episode,
    load_suite,
    replay_reference,
)
from atoll.harnesses import (
    TEMPLATE_VARIABLES,
    Demo,
    Episode,
    Event,
    HarnessConfig,
    ScriptedUser,
    ToolOverride,
    load_harness,
    run_episode,
)
from atoll.harnesses.models import ScriptedModel

ROOT = Path(__file__).resolve().parent.parent
HARNESS_DOC = ROOT / "docs" / "harness.md"
GRADERS_DOC = ROOT / "docs" / "graders.md"
FILE_MARKER = re.compile(r"<!--\s*file:\s*(?P<path>\S+)\s*-->")


def example_files(doc: Path) -> dict[str, str]:
    """The blocks headed `<!-- file: PATH -->` (on the line before the fence), as path -> text."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    files: dict[str, str] = {}
    for number, line in enumerate(lines):
        marker = FILE_MARKER.fullmatch(line.strip())
        if not marker:
            continue
        assert number + 1 < len(lines) and lines[number + 1].startswith("```"), (
            f"{doc.name}:{number + 1}: a file marker must stand on the line before a fence"
        )
        end = next(i for i in range(number + 2, len(lines)) if lines[i].rstrip() == "```")
        assert marker["path"] not in files, f"{doc.name}:{number + 1}: {marker['path']} is shown twice"
        files[marker["path"]] = "".join(f"{row}\n" for row in lines[number + 2 : end])
    return files


def write_files(files: dict[str, str], folder: Path) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def nested_models(annotation: object) -> Iterator[type[BaseModel]]:
    """The pydantic models inside a field's type: `dict[str, AgentConfig]` gives AgentConfig."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for argument in typing.get_args(annotation):
        yield from nested_models(argument)


def documented_fields(*roots: type[BaseModel], skip: tuple[type[BaseModel], ...] = ()) -> dict[str, set[str]]:
    """Model name -> its field names, for `roots` and every model their fields hold (but `skip`)."""
    found: dict[str, set[str]] = {}
    todo = list(roots)
    while todo:
        model = todo.pop()
        if model.__name__ in found or model in skip:
            continue
        found[model.__name__] = set(model.model_fields)
        for field in model.model_fields.values():
            todo += nested_models(field.annotation)
    return found


def code_words(text: str) -> set[str]:
    """The words inside the inline code spans of a markdown text (fenced blocks left out): what its
    prose names. `diff.tables` and `{approx: 1, tol: 0.1}` name `tables`, `approx` and `tol`."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return {word for span in re.findall(r"`([^`\n]+)`", prose) for word in re.findall(r"\w+", span)}


def undocumented(doc: Path, fields: dict[str, set[str]]) -> list[str]:
    """`model.field` for each field that no inline code span of the page names."""
    named = code_words(doc.read_text(encoding="utf-8"))
    return sorted(f"{model}.{name}" for model, names in fields.items() for name in names if name not in named)


# -- docs/harness.md ----------------------------------------------------------------------------


def test_the_harness_page_shows_a_whole_harness() -> None:
    files = example_files(HARNESS_DOC)
    assert {"harness.yaml", "tools.yaml"} <= files.keys()
    for kind in ("prompts/", "skills/", "demos/"):
        assert any(name.startswith(kind) for name in files), f"docs/harness.md shows no {kind} file"


def test_the_harness_example_loads(tmp_path: Path) -> None:
    harness = load_harness(write_files(example_files(HARNESS_DOC), tmp_path / "tiny_desk"))
    assert harness.world.name == "helpdesk"
    assert harness.agent(harness.entry).delegates, "the example shows a sub-agent"
    assert harness.demos and harness.skills


@pytest.mark.parametrize(
    ("model_name", "delegate", "reply"),
    [
        (
            "scripted",
            {"tool_calls": [{"name": "delegate_to_refunds", "arguments": {"request": "Refund ORD-1085."}}]},
            "Done: ORD-1085 is refunded.",
        ),
        (
            "local/gemma-3-270m",  # the embedded base model's name: the text protocol
            'Action: {"tool": "delegate_to_refunds", "args": {"request": "Refund ORD-1085."}}',
            'Action: {"tool": "reply", "args": {"message": "Done: ORD-1085 is refunded."}}',
        ),
    ],
    ids=["native", "text"],
)
def test_the_harness_example_runs(tmp_path: Path, model_name: str, delegate: object, reply: str) -> None:
    """Both agents' prompts render with a real task's context, in both protocols, and delegation works."""
    harness = load_harness(write_files(example_files(HARNESS_DOC), tmp_path / "tiny_desk"))
    answer = reply.replace("Done: ORD-1085 is refunded.", "Refunded.")
    model = ScriptedModel([delegate, answer, reply], name=model_name)
    with harness.world.instance("small_shop") as instance:
        episode = asyncio.run(
            run_episode(
                harness,
                instance,
                model,
                ScriptedUser("My plates arrived cracked."),
                task_context={"channel": "email"},
            )
        )
    assert (episode.stop_reason, episode.error, episode.replies) == (
        "reply",
        None,
        ["Done: ORD-1085 is refunded."],
    )
    assert [event.kind for event in episode.events if event.kind in ("delegate", "return")] == [
        "delegate",
        "return",
    ]
    desk_prompt = model.requests[0].messages[0]["content"]
    assert "The customer writes by email." in desk_prompt
    assert "Look the order up before you answer." in desk_prompt  # the agent's rules


def test_every_harness_field_is_documented() -> None:
    fields = documented_fields(HarnessConfig, ToolOverride, Demo)
    assert {"HarnessConfig", "AgentConfig", "Limits", "Guards", "ParamsOverride", "DemoStep"} <= fields.keys()
    fields["prompt templates"] = set(TEMPLATE_VARIABLES)
    assert undocumented(HARNESS_DOC, fields) == [], "docs/harness.md does not name these (as `field`)"


# -- docs/graders.md ----------------------------------------------------------------------------


def test_the_suite_example_loads_and_its_references_pass(tmp_path: Path) -> None:
    files = example_files(GRADERS_DOC)
    assert "suite.yaml" in files and "graders.py" in files
    assert any(name.startswith("tasks/") for name in files)
    suite = load_suite(write_files(files, tmp_path / "tiny_helpdesk"))
    assert {task.split for task in suite.tasks} >= {"train", "val"}
    named = {spec.name for task in suite.tasks for spec in task.expect.graders}
    assert named == set(suite.graders), "every grader of the example is used, and only those"
    for task in suite.tasks:
        grade = replay_reference(suite, task, suite.seeds(task)[0])
        assert grade.passed, f"{task.id}: its reference fails its own checks:\n{grade.feedback()}"


def test_no_example_task_passes_an_agent_that_does_nothing(tmp_path: Path) -> None:
    """The page warns about this trap: its own example must not fall into it."""
    suite = load_suite(write_files(example_files(GRADERS_DOC), tmp_path / "tiny_helpdesk"))
    for task in suite.tasks:
        silent = Episode(
            harness="silent",
            harness_hash="",
            model="none",
            world=suite.world.name,
            fixture=task.fixture,
            seed=0,
            task_id=task.id,
            events=[Event(kind="user", agent="desk", content=task.user.message)],
            stop_reason="reply",
        )
        assert not grade_episode(suite, task, silent).passed, f"{task.id} passes an agent that does nothing"


def test_every_suite_and_episode_field_is_documented() -> None:
    # Matchers and reference steps have a YAML shorthand of their own, documented as such below.
    fields = documented_fields(SuiteConfig, Task, Episode, Check, Grade, skip=(Matcher, ReferenceCall))
    assert {"Expect", "UserSpec", "UpdateExpect", "GraderSpec", "CallRecord", "RowChange", "TableDiff"} <= (
        fields.keys()
    )
    # A matcher is a plain value (kind `equals`) or a one-key mapping named by its kind, `approx` with a `tol`.
    kinds = set(typing.get_args(Matcher.model_fields["kind"].annotation)) - {"equals"}
    fields["value matchers"] = {*kinds, "tol"}
    assert undocumented(GRADERS_DOC, fields) == [], "docs/graders.md does not name these (as `field`)"


def test_the_field_walk_finds_nested_models() -> None:
    """The walk can fail: it reaches models inside dicts, lists and optionals."""
    assert list(nested_models(dict[str, list[Demo] | None])) == [Demo]
    assert list(nested_models(types.NoneType)) == []
    assert "AgentConfig" in documented_fields(HarnessConfig)
    assert undocumented(HARNESS_DOC, {"X": {"no_such_field_anywhere"}}) == ["X.no_such_field_anywhere"]
    assert code_words("`a.b: {c: 1}` and d\n```yaml\ne: `f`\n```\n") == {"a", "b", "c", "1"}
