"""`optimize release`: publish a harness version that passed the gate, list, show and roll back releases.

`optimize release HARNESS` publishes (it is `optimize release publish HARNESS`): a first argument that
names no subcommand is the harness folder to publish, so the common case reads as one verb.
"""

from __future__ import annotations

from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from atoll.commands._shared import (
    ConcurrencyOption,
    HarnessArgument,
    ModelOption,
    SuiteOption,
    err,
    fail,
    harness_or_default,
    option_errors,
    out,
    print_json,
)

if TYPE_CHECKING:
    from atoll.service import Release, ReleaseChain

PUBLISH = "publish"


class _PublishByDefault(TyperGroup):
    """A group whose first argument, when it names no subcommand, is the harness to publish."""

    def _with_publish(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            return [PUBLISH, *args]
        return args

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self._with_publish(ctx, args))

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        return super().resolve_command(ctx, self._with_publish(ctx, args))


release_app = typer.Typer(
    cls=_PublishByDefault,
    help="Publish gated harness versions and move the served head: `optimize release HARNESS` publishes, "
    "`list`, `show` and `rollback` read and move the chain.",
    no_args_is_help=True,
)

ReleasedArgument = Annotated[
    Path,
    typer.Argument(
        help="The harness folder, or the harness's name as released (where the folder is not at hand)."
    ),
]
NumberArgument = Annotated[int, typer.Argument(min=1, help="The release number, as `list` shows it.")]
NoteOption = Annotated[str, typer.Option(help="Free text kept with the release (why it was made).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@release_app.command(PUBLISH)
def publish(
    harness: HarnessArgument = None,
    ref: Annotated[
        str | None,
        typer.Option(help="Release the folder's files at this commit; default its committed files (clean)."),
    ] = None,
    model: ModelOption = None,
    k: Annotated[
        int | None, typer.Option("-k", min=1, help="Seeds per task; default each task's own seeds.")
    ] = None,
    suite: SuiteOption = None,
    split: Annotated[str, typer.Option(help="Which split the gate scores: train, val or test.")] = "val",
    concurrency: ConcurrencyOption = 8,
    note: NoteOption = "",
) -> None:
    """Gate a harness version against the served head and publish it as the new head. Exit 0 published,
    1 refused (a regression, or another publisher moved the head meanwhile), 2 usage or configuration
    error, 3 the gate's evaluation failed.

    The candidate is the folder's committed files (a folder with uncommitted changes is refused), or
    with --ref its files at that commit. The first release has no head to gate against and is published
    with evidence saying so. The release is tagged in git as atoll/release/NAME/N. `optimize release
    HARNESS` is short for `optimize release publish HARNESS`.

    Example: `optimize release harnesses/support_agent` or
    `optimize release harnesses/support_agent --ref v2 -k 3`
    """
    import asyncio

    from pydantic import ValidationError

    from atoll.service import ReleaseRefused, release_harness, tagged
    from atoll.views.gate import gate_progress, render_gate

    path = harness_or_default(harness)
    if not path.exists():
        names = [command.name for command in release_app.registered_commands if command.name]
        close = get_close_matches(str(path), names, n=1)
        hint = f"; did you mean `optimize release {close[0]}`?" if close else ""
        fail(f"{path}: no such harness folder{hint}")
    try:
        with gate_progress(err) as progress:
            release = asyncio.run(
                release_harness(
                    path,
                    ref=ref,
                    model_name=model,
                    k=k,
                    suite=suite,
                    split=split,
                    concurrency=concurrency,
                    note=note,
                    on_progress=progress,
                )
            )
    except ValidationError as error:
        fail(option_errors(error))
    except ReleaseRefused as refused:
        out.print(render_gate(refused.report))
        fail(str(refused), code=refused.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", code=130)
    out.print(_summary(release, "published" if release.parent is not None else "published (first release)"))
    tag = tagged(path, release)
    if tag:
        out.print(f"tag      {tag}", highlight=False)


@release_app.command("list")
def list_(harness: HarnessArgument = None, as_json: JsonOption = False) -> None:
    """List a harness's releases, oldest first; the last one is the head, the one served. A release whose
    row or files are broken in the store is listed as such, named on stderr, and the exit status is 2.

    HARNESS is the harness folder, or the harness's name as released (where the folder is not at hand).

    Example: `optimize release list harnesses/support_agent`
    """
    from atoll.evals import RunStore
    from atoll.service import ReleaseChain

    name, _ = _released(harness_or_default(harness))
    with RunStore() as store:
        chain = _checked_chain(ReleaseChain(store), name)
    problems = [problem for _, _, problem in chain if problem]
    if as_json:
        print_json(
            [
                {**release.model_dump(), "problem": problem}
                if release
                else {"harness": name, "number": number, "problem": problem}
                for number, release, problem in chain
            ]
        )
    elif not chain:
        err.print(f"{name} has no releases yet; publish one with `optimize release HARNESS`", highlight=False)
        return
    else:
        out.print(_chain_table(name, chain))
    if problems:
        served = next((number for number, _, problem in reversed(chain) if not problem), None)
        serving = f"release {served} is served in its place" if served else "no release can be served"
        fail("; ".join([*problems, serving]))


def _checked_chain(chain: ReleaseChain, name: str) -> list[tuple[int, Release | None, str | None]]:
    """Each release of `name`, oldest first, with why it cannot be served (its row or files broken in the
    store), read row by row so a broken one cannot hide the others."""
    from atoll.service import ReleaseError

    checked: list[tuple[int, Release | None, str | None]] = []
    for number in reversed(chain.numbers(name)):
        try:
            release = chain.get(name, number)
        except ReleaseError as error:
            checked.append((number, None, str(error)))
            continue
        try:
            chain.files(release)
        except ReleaseError as error:
            checked.append((number, release, str(error)))
            continue
        checked.append((number, release, None))
    return checked


def _chain_table(name: str, chain: list[tuple[int, Release | None, str | None]]) -> Table:
    table = Table("#", "kind", "parent", "commit", "content", "created", "gate", "note", title=name)
    for number, release, problem in chain:
        head = number == chain[-1][0]
        label = f"{number}{' (head)' if head else ''}{' BROKEN' if problem else ''}"
        style = "red" if problem else "bold" if head else None
        if release is None:
            table.add_row(label, "-", "-", "-", "-", "-", "-", "broken row", style=style)
            continue
        table.add_row(
            label,
            release.kind,
            str(release.parent or "-"),
            (release.commit or "-")[:10],
            release.content_hash[:12],
            release.created_at,
            escape(_short_verdict(release)),
            escape(release.note),
            style=style,
        )
    return table


@release_app.command("show")
def show(
    harness: ReleasedArgument,
    number: Annotated[int | None, typer.Argument(min=1, help="The release number; default the head.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Show one release: where it sits in the chain, its commit and files, and the evidence it was
    published on (the gate's figures and run ids, or why there was no gate).

    Example: `optimize release show harnesses/support_agent` or `optimize release show support_agent 3`
    """
    from atoll.evals import RunStore
    from atoll.service import ReleaseChain

    name, _ = _released(harness)
    with RunStore() as store:
        chain = ReleaseChain(store)
        release = chain.get(name, number) if number is not None else chain.head(name)
        if release is None:
            fail(f"{name} has no releases yet; publish one with `optimize release HARNESS`", code=1)
        files = sorted(chain.files(release))
    if as_json:
        print_json({**release.model_dump(), "files": files})
        return
    out.print(_summary(release, release.kind))
    evidence = Table("evidence", "", show_header=False, box=None, pad_edge=False)
    for key, value in release.evidence.items():
        evidence.add_row(escape(key), escape(str(value)))
    out.print(evidence)
    out.print(f"files    {escape(', '.join(files))}", highlight=False)


@release_app.command("rollback")
def rollback(harness: ReleasedArgument, number: NumberArgument, note: NoteOption = "") -> None:
    """Serve an older release again: a new release (kind rollback) with release N's files and commit,
    on top of the head. No gate runs (release N was gated when published); another publisher moving the
    head meanwhile refuses it (exit 1).

    Example: `optimize release rollback harnesses/support_agent 2`
    """
    from atoll.service import rollback_harness, tagged

    name, folder = _released(harness)
    release = rollback_harness(name, number, folder=folder, note=note)
    out.print(_summary(release, f"rolled back to release {number}"))
    tag = tagged(folder, release) if folder else None
    if tag:
        out.print(f"tag      {tag}", highlight=False)


def _released(path: Path) -> tuple[str, Path | None]:
    """(the chain's key, the harness folder): the `name` in the folder's harness.yaml, or the argument
    itself when it is a bare name and no such folder exists (then there is no folder to tag in)."""
    import yaml

    config = path / "harness.yaml"
    if config.is_file():
        data = yaml.safe_load(config.read_text())
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            return data["name"], path
        fail(f"{config}: no `name`; a released harness is known by its name")
    if path.exists() or len(path.parts) != 1:
        fail(f"{path}: not a harness folder (no harness.yaml); name a harness folder or a released harness")
    return str(path), None


def _verdict(release: Release) -> str:
    """The gate's verdict line, or why there was none."""
    return str(release.evidence.get("summary") or release.evidence.get("gate") or "-")


def _short_verdict(release: Release) -> str:
    """The verdict in a few words, for one row of `list`."""
    evidence = release.evidence
    if evidence.get("gate") is None:
        return "no gate"
    against = evidence["against"].get("release") if isinstance(evidence.get("against"), dict) else None
    delta = evidence.get("mean_delta")
    figures = f" ({delta:+.2f})" if isinstance(delta, float) else ""
    return f"{evidence['gate']} vs {against}{figures}" if against else str(evidence["gate"])


def _summary(release: Release, what: str) -> Table:
    """The release's place in the chain, its content and its verdict line, one row each."""
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_row("release", f"{release.harness} {release.number}: {what}")
    table.add_row("parent", str(release.parent) if release.parent is not None else "none")
    table.add_row("commit", release.commit or "none (not in git)")
    table.add_row("content", release.content_hash)
    table.add_row("created", release.created_at)
    table.add_row("gate", escape(_verdict(release)))
    if release.note:
        table.add_row("note", escape(release.note))
    return table
