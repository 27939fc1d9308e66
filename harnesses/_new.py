"""`optimize new harness NAME --world WORLD`: a one-agent harness that loads and runs on the first try.

It gives its agent every tool of the world (tools.yaml, written from the world so the list is right),
and a prompt and skill whose comments teach the format; docs/harness.md has the rest.
"""

from __future__ import annotations

from pathlib import Path

from atoll.worlds import get_world
from atoll.worlds.base.scaffold import (
    Scaffold,
    check_new_name,
    ensure_project_key,
    project_root,
    render_templates,
    write_new_folder,
)

from ._harness import Harness

HARNESSES_DIR = "harnesses"
TEMPLATES = Path(__file__).parent / "_templates" / "harness"


def new_harness(name: str, *, world: str, root: Path | None = None) -> Scaffold:
    """Scaffold `<root>/harnesses/<name>/` for `world`, check that it loads, and make it the project's
    default harness when atoll.toml names none."""
    check_new_name("harness", name)
    root = project_root(root)
    found = get_world(world, near=root)
    files = render_templates(TEMPLATES, name=name, world=world)  # the name as given finds it again
    files["tools.yaml"] = _tools_yaml(found.name, list(found.tools))
    destination = root / HARNESSES_DIR / name
    Harness.from_files(files, source=str(destination), world=found)  # a scaffold that fails is our bug
    written = write_new_folder(destination, files)
    project = ensure_project_key(root, "harness", f'"{HARNESSES_DIR}/{name}"')
    return Scaffold(destination, written + ([project] if project else []))


def _tools_yaml(world: str, tools: list[str]) -> str:
    listed = "\n".join(f"  - {tool}" for tool in tools)
    return (
        f"# Which {world} tools each agent sees. A mapping instead of a list overrides what the model\n"
        "# reads (the world's tool still runs and validates), e.g.\n"
        "#   agent:\n"
        '#     get_ticket: {description: Read a ticket., parameters: {ticket_id: Like "TKT-0001".}}\n'
        f"agent:\n{listed}\n"
    )
