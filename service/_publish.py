"""Publishing a harness version: gate it against the served head, then move the head by compare-and-swap.

The candidate is the harness folder's committed files (a folder with uncommitted changes is refused, as
`optimize run` refuses one: a release must name the commit it serves), or with `ref` the folder's files
at that commit. The first release of a harness has no head to gate against and says so in its evidence.
Every later one passes `optimizer.run_gate` against the head or is refused (`ReleaseRefused`, with the
gate's report); the head cannot have moved in between (`StaleRelease`, see `service._releases`), and the
gate must have graded exactly the candidate's files: a folder edited, checked out or committed to while it
was gated is refused (`ReleaseError`), as its evidence would be about other files.

How the two sides reach the gate, which compares a folder's working tree with a base git ref:

- The candidate at `ref` is the harness folder inside a temporary detached worktree of its repository
  (`git worktree add --detach`), removed afterwards: a whole checkout at that commit, so the suite and
  worlds next to the harness are found as they were there.
- The base is the head's commit, when the repository has it and the harness folder there holds exactly
  the head's files (same content hash). The gate then runs as in CI, the suite-change check included.
- Otherwise (a harness outside git, a head published from another clone, a folder that moved), the
  base is the head's files from the runs store, committed to a scratch repository beside a copy of the
  candidate's suite, with the candidate's files in its working tree. Both sides are then graded with
  that one suite: the head's own suite is not kept, so there is no suite change to check.

A published or rolled-back release with a commit is tagged in the harness's repository as
`atoll/release/<harness>/<number>` (a lightweight tag, written over any stale one: the chain in the store
is the record, the tag a view of it).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atoll.evals import RunStore, suite_for
from atoll.harnesses import Harness, content_hash, load_harness
from atoll.harnesses.models import Model
from atoll.optimizer import GateConfig, GateProgress, GateReport, git, run_gate

from ._releases import Release, ReleaseChain, ReleaseError

TAG_PREFIX = "atoll/release"


class ReleaseRefused(ReleaseError):
    """The gate did not pass the candidate against the head, so nothing was published; `report` says why.
    Exit code as the gate's: 1 regression, 3 too many errored episodes to judge."""

    def __init__(self, message: str, report: GateReport) -> None:
        super().__init__(message)
        self.report = report
        self.exit_code = report.exit_code


@dataclass(frozen=True)
class Candidate:
    """What would be released: the files, and where they come from."""

    folder: Path
    name: str
    files: dict[str, str]
    commit: str | None
    in_git: bool
    at_ref: bool  # taken from a commit, not from the folder as it is

    @property
    def hash(self) -> str:
        return content_hash(self.files)


def release_tag(release: Release) -> str:
    """The git tag naming `release`: `atoll/release/<harness>/<number>`."""
    return f"{TAG_PREFIX}/{release.harness}/{release.number}"


async def release_harness(
    harness_path: Path,
    *,
    ref: str | None = None,
    store: RunStore | None = None,
    model: Model | None = None,
    model_name: str | None = None,
    k: int | None = None,
    suite: Path | None = None,
    split: str = "val",
    concurrency: int = 8,
    note: str = "",
    on_progress: GateProgress | None = None,
) -> Release:
    """Gate the harness at `harness_path` against its served head, then publish it as the new head.

    Args:
        harness_path: the harness folder; its committed files are the candidate (it must be clean).
        ref: release the folder's files at this commit instead (the folder may then be dirty).
        store: the runs store holding the chain and the gate's runs; default runs/atoll.sqlite.
        model: a Model object for both sides of the gate (a ScriptedModel in tests).
        model_name: the agent model's name otherwise; default $ATOLL_MODEL, else the harness's.
        k: seeds per task; default each task's own.
        suite: the eval suite; default the candidate's (see `evals.suite_for`).
        split: the split the gate scores.
        concurrency: episodes in flight at once.
        note: free text kept with the release.
        on_progress: the gate's progress callback (see `optimizer.GateProgress`).

    Raises ReleaseRefused when the gate does not pass, StaleRelease when another publisher moved the head
    during the gate, ReleaseError when there is nothing to release, GateError when the gate cannot judge.
    """
    settings = GateConfig(
        harness=harness_path,
        model=model_name,
        k=k,
        split=split,
        concurrency=concurrency,
        suite=suite.resolve() if suite else None,
    )
    own_store = store is None
    store = store or RunStore()
    try:
        chain = ReleaseChain(store)
        candidate = read_candidate(harness_path, ref)
        head = chain.head(candidate.name)
        if head is None:
            evidence: dict[str, Any] = {
                "gate": None,
                "summary": f"no gate: the first release of {candidate.name} has no head to gate against",
            }
        else:
            if head.content_hash == candidate.hash:
                raise ReleaseError(
                    f"release {head.number} of {candidate.name} already serves these files "
                    f"(content hash {head.content_hash[:12]}): nothing to release"
                )
            report = await gate_candidate(candidate, head, chain, settings, model, store, on_progress)
            if report.verdict != "pass":
                raise ReleaseRefused(
                    f"{candidate.name} was not released: the gate's verdict against release {head.number} is "
                    f"{report.verdict} ({'; '.join(report.reasons) or report.gate.summary()}); "
                    f"release {head.number} stays the head",
                    report,
                )
            evidence = gate_evidence(report, head)
        release = chain.publish(
            candidate.name,
            candidate.files,
            commit=candidate.commit,
            evidence=evidence,
            expected_head=head.number if head else None,
            note=note,
        )
        if candidate.in_git:
            tag_release(harness_path, release)
        return release
    finally:
        if own_store:
            store.close()


def rollback_harness(
    harness: str, to: int, *, store: RunStore | None = None, folder: Path | None = None, note: str = ""
) -> Release:
    """Serve release `to` of `harness` again, as a new release on top of the head read now; tag it in the
    repository holding `folder` when that repository has its commit."""
    own_store = store is None
    store = store or RunStore()
    try:
        chain = ReleaseChain(store)
        head = chain.head(harness)
        release = chain.rollback(harness, to, expected_head=head.number if head else None, note=note)
        if folder is not None and release.commit is not None and _knows(folder, release.commit):
            tag_release(folder, release)
        return release
    finally:
        if own_store:
            store.close()


def tagged(folder: Path, release: Release) -> str | None:
    """The tag of `release` if the repository holding `folder` has it, else None."""
    with suppress(git.GitError):
        git.resolve_ref(folder, f"refs/tags/{release_tag(release)}")
        return release_tag(release)
    return None


# -- the candidate --------------------------------------------------------------------------------


def read_candidate(path: Path, ref: str | None) -> Candidate:
    """The files to release: the clean folder's, or the folder's at `ref`, validated as a harness."""
    try:
        git.repo_root(path)
        in_git = True
    except git.NotARepository:
        in_git = False
    if ref is not None:
        if not in_git:
            raise ReleaseError(
                f"{path} is not in a git repository, so --ref has no commit to take it from; "
                "release the folder as it is (without --ref)"
            )
        try:
            commit = git.resolve_ref(path, ref)
        except git.GitError:
            raise ReleaseError(f"--ref {ref!r} is not a commit of the repository holding {path}") from None
        files = git.harness_files_at(path, commit)
        if not files:
            raise ReleaseError(f"{path} does not exist at {ref} ({commit[:10]}): nothing to release there")
        harness = Harness.from_files(files, source=f"{path}@{commit[:10]}")
        return Candidate(path, harness.name, harness.files(), commit, in_git, at_ref=True)
    harness = load_harness(path)
    if not in_git:
        return Candidate(path, harness.name, harness.files(), None, in_git, at_ref=False)
    dirty = git.dirty_files(path)
    if dirty:
        raise ReleaseError(
            f"{path} has uncommitted changes ({', '.join(dirty[:5])}); commit them, or pass --ref COMMIT "
            "to release a committed version: a release serves the files of one commit"
        )
    commit = git.resolve_ref(path, "HEAD")
    if content_hash(git.harness_files_at(path, commit)) != harness.hash:
        raise ReleaseError(
            f"{path}: its files differ from commit {commit[:10]} (files git ignores?); "
            "commit them or remove them, so the release is exactly that commit's files"
        )
    return Candidate(path, harness.name, harness.files(), commit, in_git, at_ref=False)


# -- the gate -------------------------------------------------------------------------------------


async def gate_candidate(
    candidate: Candidate,
    head: Release,
    chain: ReleaseChain,
    settings: GateConfig,
    model: Model | None,
    store: RunStore,
    on_progress: GateProgress | None,
) -> GateReport:
    """Gate `candidate` against `head`, refusing a report on files other than the candidate's (`check_gated`).

    The routes are in the module docstring; `settings` are the gate's options, its harness and base are set
    here.
    """
    with ExitStack() as stack:
        folder = candidate.folder
        if candidate.at_ref and candidate.commit is not None:
            folder = stack.enter_context(_worktree(folder, candidate.commit))
        if candidate.in_git and _holds(folder, head):
            config = settings.model_copy(update={"harness": folder, "base": _base_ref(folder, head)})
        else:
            suite = settings.suite or suite_for(load_harness(folder))
            harness, suite_copy, base = stack.enter_context(
                _stored_base(head, chain.files(head), candidate, suite)
            )
            config = settings.model_copy(update={"harness": harness, "base": base, "suite": suite_copy})
        report = await run_gate(config, model=model, store=store, on_progress=on_progress)
    check_gated(candidate, report)
    return report


def check_gated(candidate: Candidate, report: GateReport) -> None:
    """Refuse (ReleaseError) a gate report whose candidate side graded other files than `candidate`'s."""
    # The candidate's files are read before the gate; the gate reads the folder's working tree (when the
    # head's commit is in its repository) minutes later. An edit, checkout or commit in between would have
    # the release publish files on evidence about others.
    sides = [report.candidate]
    if report.under_base_suite is not None:
        sides.append(report.under_base_suite.candidate)
    gated = next((side.harness_hash for side in sides if side.harness_hash != candidate.hash), None)
    if gated is not None:
        raise ReleaseError(
            f"the harness folder changed while it was gated: {candidate.folder} held content hash "
            f"{candidate.hash[:12]}"
            + (f" (commit {candidate.commit[:10]})" if candidate.commit else "")
            + f" when read, the gate graded {gated[:12]}; nothing was released, run again"
        )


def _base_ref(folder: Path, head: Release) -> str:
    """The head's tag when it names the head's commit (the gate's report then says which release it
    judged against), else the commit."""
    tag = release_tag(head)
    with suppress(git.GitError):
        if git.resolve_ref(folder, tag) == head.commit:
            return tag
    return str(head.commit)


def _knows(folder: Path, commit: str) -> bool:
    try:
        git.resolve_ref(folder, commit)
    except git.GitError:
        return False
    return True


def _holds(folder: Path, release: Release) -> bool:
    """Whether `folder`'s repository has `release`'s commit with exactly its files in that folder."""
    if release.commit is None or not _knows(folder, release.commit):
        return False
    try:
        return content_hash(git.harness_files_at(folder, release.commit)) == release.content_hash
    except git.GitError:  # a symbolic link there: not what the release holds
        return False


@contextmanager
def _worktree(folder: Path, commit: str) -> Iterator[Path]:
    """`folder` as it is at `commit`, in a temporary detached worktree of its repository: a whole
    checkout, so the suite and worlds beside the harness are those of that commit."""
    root, relative = git.relative_to_root(folder)
    with tempfile.TemporaryDirectory(prefix="atoll-release-") as scratch:
        tree = Path(scratch) / "tree"
        git.run("worktree", "add", "--detach", "--quiet", str(tree), commit, cwd=root)
        try:
            yield tree / relative
        finally:  # a failed removal must not hide the gate's own error; `git worktree prune` tidies later
            with suppress(git.GitError):
                git.run("worktree", "remove", "--force", str(tree), cwd=root)


@contextmanager
def _stored_base(
    head: Release, base_files: dict[str, str], candidate: Candidate, suite: Path
) -> Iterator[tuple[Path, Path, str]]:
    """A scratch repository whose one commit holds the head's files and a copy of `suite`, with the
    candidate's files in its working tree; yields (harness folder, suite folder, the head's tag there)."""
    with tempfile.TemporaryDirectory(prefix="atoll-release-") as scratch:
        root = Path(scratch)
        harness, suite_copy = root / "harness", root / "suite"
        _write(harness, base_files)
        shutil.copytree(suite, suite_copy, ignore=shutil.ignore_patterns("__pycache__", ".*"))
        identity = ("-c", "user.name=Atoll", "-c", "user.email=atoll@localhost", "-c", "commit.gpgsign=false")
        git.run("init", "--quiet", cwd=root)
        git.run("add", "--all", cwd=root)
        git.run(*identity, "commit", "--quiet", "--no-verify", "-m", "the served head", cwd=root)
        git.run("update-ref", f"refs/tags/{release_tag(head)}", "HEAD", cwd=root)
        shutil.rmtree(harness)
        _write(harness, candidate.files)
        yield harness, suite_copy, release_tag(head)


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())  # bytes as stored: the content hash is over them


def tag_release(folder: Path, release: Release) -> None:
    """Tag `release`'s commit; the release is already published, so a failure says how to tag by hand."""
    if release.commit is None:
        return
    tag = release_tag(release)
    try:
        git.run("update-ref", f"refs/tags/{tag}", release.commit, cwd=git.repo_root(folder))
    except git.GitError as error:
        raise ReleaseError(
            f"release {release.number} of {release.harness} is published, but tagging it failed ({error}); "
            f"tag it with `git tag --force {tag} {release.commit}`"
        ) from None


def gate_evidence(report: GateReport, head: Release) -> dict[str, Any]:
    """The gate's key figures and its run ids (`optimize show RUN` opens them), kept with the release."""
    comparison = report.gate.comparison
    return {
        "gate": report.verdict,
        "summary": report.gate.summary(),
        "against": {"release": head.number, "commit": head.commit, "content_hash": head.content_hash},
        "base_run": report.base.run_id,
        "candidate_run": report.candidate.run_id,
        "suite": report.suite,
        "suite_fingerprint": report.suite_fingerprint,
        "suite_change": report.suite_change.files if report.suite_change else None,
        "split": report.split,
        "model": report.candidate.model,
        "tasks": len(report.tasks),
        "episodes": report.candidate.episodes,
        "base_mean": comparison.incumbent_mean,
        "candidate_mean": comparison.candidate_mean,
        "mean_delta": comparison.mean_delta,
        "lower_bound": comparison.lower_bound,
        "wins": comparison.wins,
        "losses": comparison.losses,
        "notes": report.notes,
    }
