"""Harness folders: loading with errors that name file and field, the content hash, atomic writes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parents[1] / "worlds"))
from shop_world import shop

from harnesses import Harness, HarnessError, content_hash, load_harness

FILES = {
    "harness.yaml": """\
name: toy
world: shop
entry: front
agents:
  front:
    prompt: prompts/front.md.j2
    delegates: [orders]
    demos: [lookup]
    skills: [tone]
  orders:
    description: Places orders.
    prompt: prompts/orders.md.j2
""",
    "tools.yaml": """\
front: [get_customer]
orders:
  place_order:
    description: Place an order now.
    parameters: {total: The order total in dollars.}
""",
    "prompts/front.md.j2": "Policy: {{ documents.policy }}\n{{ skills.tone }}\n{{ tools }}\n{{ demos }}\n",
    "prompts/orders.md.j2": "You place orders. {% include 'skills/tone.md' %}\n{{ tools }}\n",
    "skills/tone.md": "# Tone\nBe brief.\n",
    "demos/lookup.yaml": """\
steps:
  - user: Who is C1?
  - call: get_customer
    args: {customer_id: C1}
    result: {id: C1, name: Customer 1}
  - reply: C1 is Customer 1.
""",
}


def load_error(files: dict[str, str]) -> str:
    with pytest.raises(HarnessError) as raised:
        Harness.from_files(files, source="harnesses/toy", world=shop)
    return str(raised.value)


def edited(name: str, old: str, new: str) -> dict[str, str]:
    files = dict(FILES)
    assert old in files[name], f"test setup: {old!r} not in {name}"
    files[name] = files[name].replace(old, new)
    return files


def test_a_valid_harness_loads_with_its_agents_demos_and_skills() -> None:
    harness = Harness.from_files(FILES, world=shop)
    assert harness.entry == "front"
    assert list(harness.agents) == ["front", "orders"]
    assert harness.skills == {"tone": "# Tone\nBe brief.\n"}
    assert harness.demos["lookup"].steps[1].call == "get_customer"
    assert list(harness.tools["orders"]) == ["place_order"]


def test_a_missing_prompt_file_is_named_with_the_agent_field() -> None:
    files = dict(FILES)
    del files["prompts/orders.md.j2"]
    assert (
        "harnesses/toy/harness.yaml: agents.orders.prompt: file prompts/orders.md.j2 not found"
        in load_error(files)
    )


def test_bad_yaml_names_the_file_and_line() -> None:
    message = load_error(edited("harness.yaml", "entry: front", "entry: [front"))
    assert message.startswith("harnesses/toy/harness.yaml: line ")
    assert "invalid YAML" in message


def test_an_unknown_tool_names_tools_yaml_and_the_agent() -> None:
    message = load_error(
        edited("tools.yaml", "front: [get_customer]", "front: [get_customer, refund_everything]")
    )
    assert (
        "harnesses/toy/tools.yaml: front.refund_everything: agent 'front': world 'shop' has no tool"
        in message
    )


def test_an_override_of_a_parameter_the_tool_lacks_is_refused() -> None:
    message = load_error(edited("tools.yaml", "{total:", "{amount:"))
    assert (
        "tools.yaml: orders.place_order.parameters.amount: tool 'place_order' has no parameter 'amount'"
        in message
    )


def test_an_unknown_delegate_target_is_named() -> None:
    message = load_error(edited("harness.yaml", "delegates: [orders]", "delegates: [ordrs]"))
    assert "harness.yaml: agents.front.delegates[0]: no agent 'ordrs'; agents: front, orders" in message


def test_a_delegation_cycle_is_refused() -> None:
    files = edited(
        "harness.yaml",
        "    prompt: prompts/orders.md.j2",
        "    prompt: prompts/orders.md.j2\n    delegates: [front]",
    )
    assert "delegation cycle" in load_error(files)


def test_a_jinja_syntax_error_names_the_template_and_line() -> None:
    message = load_error(edited("prompts/orders.md.j2", "{{ tools }}", "{% if tools %}{{ tools }}"))
    assert "harnesses/toy/prompts/orders.md.j2: line " in message
    assert "template syntax" in message


def test_an_undefined_template_variable_fails_at_load_not_mid_episode() -> None:
    message = load_error(edited("prompts/front.md.j2", "documents.policy", "documents.polcy"))
    assert (
        "harnesses/toy/prompts/front.md.j2: agent front, text protocol (prompts/front.md.j2, line 1)"
        in message
    )
    assert "polcy" in message


def test_a_typo_in_a_field_name_is_an_unknown_field() -> None:
    message = load_error(edited("harness.yaml", "    delegates: [orders]", "    delegate: [orders]"))
    assert "harness.yaml: agents.front.delegate: unknown field" in message


def test_a_demo_calling_a_tool_its_agent_lacks_is_named() -> None:
    message = load_error(edited("demos/lookup.yaml", "call: get_customer", "call: place_order"))
    assert (
        "demos/lookup.yaml: steps[1].call: agent 'front' (which shows this demo) has no tool 'place_order'"
        in message
    )


def test_a_malformed_demo_step_is_named() -> None:
    message = load_error(
        edited("demos/lookup.yaml", "  - reply: C1 is Customer 1.", "  - reply: hi\n    user: again")
    )
    assert "demos/lookup.yaml: steps[2]: a step has exactly one of user, call or reply" in message


def test_an_empty_demo_file_is_a_demo_without_steps() -> None:
    message = load_error({**FILES, "demos/lookup.yaml": ""})
    assert "harnesses/toy/demos/lookup.yaml: steps: missing: add it" in message


def test_every_problem_is_reported_at_once() -> None:
    files = edited("harness.yaml", "delegates: [orders]", "delegates: [nobody]")
    files["tools.yaml"] += "ghost: [get_customer]\n"
    lines = load_error(files).splitlines()
    assert len(lines) == 2
    assert any("tools.yaml: ghost: no agent 'ghost'" in line for line in lines)


def test_an_unknown_world_is_named_in_harness_yaml() -> None:
    files = edited("harness.yaml", "world: shop", "world: no_such_world_here")
    with pytest.raises(HarnessError, match=r"harness\.yaml: world: cannot load world 'no_such_world_here'"):
        Harness.from_files(files)


def test_load_harness_reads_a_folder_and_ignores_dotfiles_and_pycache(tmp_path: Path) -> None:
    Harness.from_files(FILES, world=shop).write(tmp_path / "toy")
    (tmp_path / "toy" / ".notes").write_text("private")
    (tmp_path / "toy" / "__pycache__").mkdir()
    (tmp_path / "toy" / "__pycache__" / "x.pyc").write_bytes(b"\0\1")
    harness = load_harness(tmp_path / "toy", world=shop)
    assert harness.files() == FILES
    assert harness.hash == content_hash(FILES)


def test_the_content_hash_is_stable_and_changes_with_any_byte() -> None:
    first = Harness.from_files(FILES, world=shop).hash
    assert Harness.from_files(dict(reversed(FILES.items())), world=shop).hash == first
    changed = edited("skills/tone.md", "Be brief.", "Be brief!")
    assert Harness.from_files(changed, world=shop).hash != first
    renamed = dict(FILES)
    renamed["skills/tone2.md"] = renamed.pop("skills/tone.md")
    assert content_hash(renamed) != content_hash(FILES)


@given(st.dictionaries(st.from_regex(r"[a-z]{1,8}(/[a-z]{1,8})?\.md", fullmatch=True), st.text(), max_size=6))
def test_the_hash_depends_on_the_files_not_their_order(files: dict[str, str]) -> None:
    assert content_hash(files) == content_hash(dict(sorted(files.items(), reverse=True)))


def test_the_path_and_content_boundary_cannot_be_shifted() -> None:
    assert content_hash({"a": "bc"}) != content_hash({"ab": "c"})


def test_writing_replaces_the_folder_whole_and_keeps_its_dotfiles(tmp_path: Path) -> None:
    target = tmp_path / "toy"
    harness = Harness.from_files(FILES, world=shop)
    harness.write(target)
    (target / ".gitignore").write_text("*.tmp\n")
    (target / "stale.md").write_text("from an older version")
    mutated = harness.with_files({"skills/tone.md": "# Tone\nBe warm.\n"})
    mutated.write(target)
    assert load_harness(target, world=shop).hash == mutated.hash
    assert not (target / "stale.md").exists()
    assert (target / ".gitignore").read_text() == "*.tmp\n"
    assert [p.name for p in tmp_path.iterdir()] == ["toy"], "no staging folders are left behind"


def test_a_write_that_dies_halfway_leaves_the_old_harness_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "toy"
    Harness.from_files(FILES, world=shop).write(target)
    mutated = Harness.from_files(FILES, world=shop).with_files({"skills/tone.md": "# Tone\nBe warm.\n"})
    written = []

    def dying_fsync(fd: int) -> None:
        written.append(fd)
        if len(written) == 3:
            raise OSError("disk full")

    monkeypatch.setattr("os.fsync", dying_fsync)
    with pytest.raises(OSError, match="disk full"):
        mutated.write(target)
    monkeypatch.undo()
    assert load_harness(target, world=shop).files() == FILES
    assert [p.name for p in tmp_path.iterdir()] == ["toy"]


def test_a_file_name_outside_the_folder_is_refused() -> None:
    with pytest.raises(HarnessError, match=r"\.\./escape\.md: a harness file name must be a relative path"):
        Harness.from_files({**FILES, "../escape.md": "x"}, world=shop)


def test_with_files_validates_the_mutation() -> None:
    harness = Harness.from_files(FILES, world=shop)
    with pytest.raises(HarnessError, match="tools.yaml: front.nope"):
        harness.with_files({"tools.yaml": "front: [nope]\n"})
    smaller = harness.with_files(
        {
            "demos/lookup.yaml": None,
            "harness.yaml": FILES["harness.yaml"].replace("    demos: [lookup]\n", ""),
        }
    )
    assert "demos/lookup.yaml" not in smaller.files()
