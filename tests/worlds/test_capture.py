"""Change capture: every row a call writes is in its log and the diff, whichever way it is captured."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from capture_world import episode, ledger
from shop_world import loyalty, shop
from test_engine import full_comparison

from atoll.worlds import _capture

HERE = Path(__file__).parent

EPISODES = """
import json
from capture_world import episode, ledger
from shop_world import loyalty, shop
from atoll.worlds import _capture

def record(instance):
    calls = [
        {"tool": r.tool, "ok": r.ok, "changes": sorted(json.dumps(c.model_dump(), sort_keys=True) for c in r.changes)}
        for r in instance.log
    ]
    return {"log": calls, "diff": instance.diff().model_dump_json()}

out = {"kind": _capture.KIND}
with ledger.instance("three", seed=1) as inst:
    episode(inst)
    out["ledger"] = record(inst)
with shop.instance("tiny", seed=2) as inst:
    inst.call("place_order", customer_id="C1", total=12.0)
    inst.call("set_status", order_id=2, status="paid")
    inst.call("credit_then_fail", customer_id="C1", amount=1.0)
    inst.call("delete_order", order_id=3)
    out["shop"] = record(inst)
with loyalty.instance("tiny", seed=3) as inst:
    inst.call("award", customer_id="C2", points=5)
    inst.call("shop_set_status", order_id=1, status="paid")
    out["loyalty"] = record(inst)
print(json.dumps(out))
"""


def run_episodes(kind: str, cache: Path) -> dict:
    environment = dict(os.environ, ATOLL_CHANGE_CAPTURE=kind, ATOLL_CACHE_DIR=str(cache))
    environment["PYTHONPATH"] = os.pathsep.join([str(HERE), str(HERE.parent.parent)])
    completed = subprocess.run(
        [sys.executable, "-c", EPISODES], capture_output=True, text=True, check=True, env=environment
    )
    return json.loads(completed.stdout)


def test_indirect_writes_are_in_the_diff_exactly():
    with ledger.instance("three") as inst:
        episode(inst)
        assert all(record.ok for record in inst.log), [r.error for r in inst.log]
        diff = inst.diff()
        assert diff.model_dump()["tables"] == full_comparison(ledger, inst)
    assert diff.summary() == {
        "accounts": {"inserted": 1, "updated": 1, "deleted": 2},  # A1 renamed, then replaced
        "audit": {"inserted": 2, "updated": 0, "deleted": 0},
        "tags": {"inserted": 1, "updated": 0, "deleted": 4},
    }
    # The statement SQLite undid row by row left nothing; the write after it and its audit row stand.
    assert sorted((c.table, c.op, str(c.key)) for c in inst.log[-1].changes) == [
        ("accounts", "update", "{'id': 'A3'}"),
        ("audit", "insert", "{'id': 2}"),
    ]


def test_a_failed_calls_writes_never_reach_the_next_calls_log():
    with shop.instance("tiny") as inst:
        assert not inst.call("credit_then_fail", customer_id="C1", amount=1.0).ok
        inst.call("set_status", order_id=1, status="paid")
        assert [(c.table, c.key) for c in inst.log[-1].changes] == [("orders", {"id": 1})]


def test_the_hook_and_the_triggers_record_the_same_changes_and_diffs(tmp_path):
    hook, triggers = run_episodes("hook", tmp_path / "hook"), run_episodes("triggers", tmp_path / "triggers")
    assert triggers.pop("kind") == "triggers"
    if hook.pop("kind") != "hook":
        pytest.skip("this SQLite library has no pre-update hook; the triggers ran both times")
    assert hook == triggers


@pytest.mark.skipif(_capture.KIND != "hook", reason="this SQLite library has no pre-update hook")
def test_with_the_hook_a_fixture_carries_only_the_worlds_own_schema():
    for world, fixture in ((shop, "tiny"), (loyalty, "tiny"), (ledger, "three")):
        for part in world.load_fixture(fixture).parts.values():
            connection = sqlite3.connect(":memory:")
            connection.deserialize(part)
            names = [row[0] for row in connection.execute("SELECT name FROM sqlite_master")]
            assert not [name for name in names if name.startswith("_atoll")], names
