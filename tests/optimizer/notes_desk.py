"""A tiny harness and suite on the helpdesk world, in a throwaway git repo, for optimizer tests.

The scripted agent adds the order note a task asks for only when its system prompt says
ALWAYS ADD A NOTE, so one line of prompt decides every score: a proposer that writes it truly
helps, a template comment does nothing, and deleting it is a sabotage.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from atoll.optimizer import Operator, Proposal, ProposalContext

PROMPT = "prompts/desk.md.j2"
MAGIC = "ALWAYS ADD A NOTE when asked."
HARNESS_YAML = "name: notes_desk\nworld: helpdesk\nmodel: scripted\nentry: desk\nagents:\n  desk:\n    prompt: prompts/desk.md.j2\n"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def agent(request) -> str | dict:
    """The scripted agent: note-taking only when told to."""
    system, last = request.messages[0]["content"], request.messages[-1]
    if last["role"] == "tool":
        return "Done, the note is on the order."
    if MAGIC in system:
        order = re.search(r"ORD-\d+", last["content"]).group()
        return {
            "tool_calls": [{"name": "add_order_note", "arguments": {"order_id": order, "note": "called"}}]
        }
    return "Sorry, I can't do that."


class Helpful(Operator):
    """Writes the line that makes the agent work."""

    name = "helpful"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        files = dict(context.files)
        files[PROMPT] = files[PROMPT] + MAGIC + "\n"
        return Proposal.build(
            operator=self.name,
            rationale="Tell the agent to add notes.",
            parent=context.files,
            files=files,
            parent_hash=context.harness_hash,
        )


class DoesNothing(Operator):
    """Adds a template comment the model never sees."""

    name = "does_nothing"

    async def propose(self, context: ProposalContext) -> Proposal | None:
        files = dict(context.files)
        files[PROMPT] = files[PROMPT] + f"{{# tweak {context.iteration} #}}\n"
        return Proposal.build(
            operator=self.name,
            rationale="A comment the model never sees.",
            parent=context.files,
            files=files,
            parent_hash=context.harness_hash,
        )


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def make_workspace(
    root: Path,
    *,
    prompt: str,
    val: list[int],
    tasks: int = 12,
    seeds: str = "[0]",
    extra: dict[str, str] | None = None,
    harness_yaml: str = HARNESS_YAML,
) -> Path:
    """A git repo at `root` with the harness in h/ and the suite in s/: tasks note-1..note-N, the
    ones numbered in `val` in the val split, the rest in train."""
    write(
        root / "h",
        {
            "harness.yaml": harness_yaml,
            "tools.yaml": "desk: [add_order_note]\n",
            PROMPT: prompt,
            **(extra or {}),
        },
    )
    entries = []
    for i in range(1, tasks + 1):
        order = f"ORD-{1000 + i}"
        entries.append(
            f"- id: note-{i}\n  split: {'val' if i in val else 'train'}\n  fixture: small_shop\n"
            f"  user: {{message: 'Please add a note to order {order} that I called.'}}\n"
            f"  reference: [{{add_order_note: {{order_id: {order}, note: called}}}}]\n"
            f"  expect:\n    inserted: {{order_notes: [{{order_id: {order}}}]}}\n    no_other_writes: true\n"
        )
    write(
        root / "s",
        {
            "suite.yaml": f"name: notes\nworld: helpdesk\ndefault_seeds: {seeds}\n",
            "tasks/notes.yaml": "".join(entries),
        },
    )
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.invalid")
    git(root, "config", "user.name", "T")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    return root
