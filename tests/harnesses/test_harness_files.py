"""Harness folders: loading with errors that name file and field, the content hash, atomic writes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parents[1] / "worlds"))
from shop_world import shop

from atoll.harnesses import Harness, HarnessError, content_hash, load_harness

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


def write_files(folder: Path, files: dict[str, str]) -> Path:
    """Files on disk as a user or a proposer would leave them, loadable or not."""
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


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


def test_yaml_aliases_in_a_harness_file_are_refused_so_a_billion_laughs_cannot_expand() -> None:
    bomb = "    result: {id: C1, name: Customer 1}"
    laughs = "\n".join(
        f"    x{i}: &x{i + 1} [*x{i}, *x{i}, *x{i}, *x{i}, *x{i}, *x{i}, *x{i}, *x{i}]" for i in range(1, 9)
    )
    message = load_error(edited("demos/lookup.yaml", bomb, f"    result:\n    x0: &x1 lol\n{laughs}"))
    assert message.startswith("harnesses/toy/demos/lookup.yaml: line ")
    assert "aliases (*name) are not allowed in harness files" in message


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


def test_a_template_cannot_reach_python_to_run_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    payload = "{{ cycler.__init__.__globals__.os.system('id > pwned.txt') }}"
    folder = write_files(tmp_path / "toy", edited("prompts/front.md.j2", "{{ demos }}", payload))
    with pytest.raises(HarnessError) as raised:
        load_harness(folder, world=shop)
    assert not (tmp_path / "pwned.txt").exists(), "the template ran a shell command"
    assert str(raised.value).startswith(
        f"{folder}/prompts/front.md.j2: agent front, text protocol (prompts/front.md.j2, line 4): "
        "refused by the template sandbox: access to attribute '__init__'"
    )
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("payload", ["{{ 'x' * 10**10 }}", "{{ [1] * 10**9 }}", "{{ 2 ** 100000000 }}"])
def test_a_template_cannot_build_a_value_that_exhausts_memory(payload: str) -> None:
    message = load_error(edited("prompts/orders.md.j2", "{{ tools }}", payload))
    assert "refused by the template sandbox" in message and "\n" not in message


def test_a_template_that_fails_to_render_is_a_load_error_naming_file_and_line() -> None:
    message = load_error(edited("prompts/orders.md.j2", "{{ tools }}", "{{ 1/0 }}"))
    assert message == (
        "harnesses/toy/prompts/orders.md.j2: agent orders, text protocol (prompts/orders.md.j2, line 2): "
        "ZeroDivisionError: division by zero"
    )


def test_what_a_template_does_with_task_values_is_left_to_the_real_task() -> None:
    uses = (
        "{{ task.total + 1 }} {{ 100 / task.count }} {% if task.amount > 50 %}big{% endif %} "
        "{{ task.price|round(2) }} {{ task.customer.name|upper }} {{ task.lines[0].sku }} "
        "{% for key, value in task.extra.items() %}{{ key }}={{ value }}{% endfor %} {{ task.get('n') - 1 }}\n"
    )
    Harness.from_files(edited("prompts/orders.md.j2", "{{ tools }}\n", uses), world=shop)


def test_a_render_error_at_episode_time_is_a_harness_error() -> None:
    harness = Harness.from_files(
        edited("prompts/orders.md.j2", "{{ tools }}", "{{ 100 // task.count }}"), world=shop
    )
    context = {"agent": "orders", "harness": "toy", "documents": {}, "task": {"count": 0}, "skills": {}}
    with pytest.raises(HarnessError, match=r"prompts/orders\.md\.j2, line 2\): ZeroDivisionError"):
        harness.render_prompt("orders", {**context, "tools": "", "demos": "", "protocol": "text", "now": ""})


def test_a_symlink_in_a_harness_folder_is_refused(tmp_path: Path) -> None:
    folder = write_files(tmp_path / "toy", FILES)
    (tmp_path / "tone.md").write_text("# Tone\nBe brief.\n")
    (folder / "skills" / "tone.md").unlink()
    (folder / "skills" / "tone.md").symlink_to(tmp_path / "tone.md")
    with pytest.raises(HarnessError) as raised:
        load_harness(folder, world=shop)
    assert str(raised.value) == (
        f"{folder}/skills/tone.md: a symbolic link; a harness holds regular files only (copy the file in)"
    )


def test_a_write_killed_between_its_two_renames_is_finished_by_the_next_load(tmp_path: Path) -> None:
    target = tmp_path / "toy"
    Harness.from_files(FILES, world=shop).write(target)
    (target / ".gitignore").write_text("*.tmp\n")
    mutated = Harness.from_files(FILES, world=shop).with_files({"skills/tone.md": "# Tone\nBe warm.\n"})
    pid = os.fork()
    if pid == 0:  # the child dies like `kill -9` once the old folder is retired, before the new one moves in
        try:
            real_rename = os.rename

            def rename(source: object, destination: object) -> None:
                if Path(str(destination)) == target:
                    os._exit(9)
                real_rename(source, destination)

            os.rename = rename
            mutated.write(target)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 9
    assert not target.exists() and len(list(tmp_path.iterdir())) == 2, "the crash state: .old-* and .new-*"
    assert load_harness(target, world=shop).hash == mutated.hash
    assert (target / ".gitignore").read_text() == "*.tmp\n"
    assert [p.name for p in tmp_path.iterdir()] == ["toy"], "no leftovers"


def test_a_retired_folder_without_its_new_one_is_restored_by_the_next_load(tmp_path: Path) -> None:
    # What an older Atoll left when killed between the renames: unpaired names, so the old one comes back.
    write_files(tmp_path / ".toy.old-k3x9" / "toy", FILES)
    write_files(tmp_path / ".toy.new-q7za", {"skills/tone.md": "half"})
    (tmp_path / ".toy.new-q7za" / ".gitignore").write_text("*.tmp\n")
    assert load_harness(tmp_path / "toy", world=shop).files() == FILES
    assert (tmp_path / "toy" / ".gitignore").read_text() == "*.tmp\n"
    assert [p.name for p in tmp_path.iterdir()] == ["toy"]


def test_a_missing_harness_with_ambiguous_leftovers_names_them(tmp_path: Path) -> None:
    write_files(tmp_path / ".toy.old-aaa" / "toy", FILES)
    write_files(tmp_path / ".toy.old-bbb" / "toy", FILES)
    with pytest.raises(
        HarnessError, match=r"toy: missing, and interrupted writes left \.toy\.old-aaa, \.toy\.old-bbb"
    ):
        load_harness(tmp_path / "toy", world=shop)
