"""The world engine, through its public surface, on the two-table shop world."""

from __future__ import annotations

import gc
import importlib
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shop_world import loyalty, shop

from atoll.worlds import (
    Clock,
    FixtureContext,
    InstanceClosed,
    ToolContext,
    UnknownFixture,
    UnknownWorld,
    World,
    WorldDefinitionError,
    get_world,
)


def full_comparison(world: World, instance) -> dict:
    """The diff computed the slow way: every row of every table, before and after."""
    reader = sqlite3.connect(":memory:")
    reader.row_factory = lambda cursor, row: {d[0]: v for d, v in zip(cursor.description, row)}
    reader.deserialize(instance.fixture.parts["main"])
    result = {}
    for name, table in world.tables.items():
        pk = table.primary_key
        before = {tuple(r[c] for c in pk): r for r in reader.execute(f'SELECT * FROM "{name}"').fetchall()}
        after = {tuple(r[c] for c in pk): r for r in instance.query(f'SELECT * FROM "{name}"')}
        inserted = [after[k] for k in sorted(after.keys() - before.keys())]
        deleted = [before[k] for k in sorted(before.keys() - after.keys())]
        updated = []
        for k in sorted(before.keys() & after.keys()):
            changed = [c for c in after[k] if before[k][c] != after[k][c]]
            if changed:
                updated.append(
                    {
                        "key": dict(zip(pk, k)),
                        "before": {c: before[k][c] for c in changed},
                        "after": {c: after[k][c] for c in changed},
                    }
                )
        if inserted or deleted or updated:
            result[name] = {"inserted": inserted, "updated": updated, "deleted": deleted}
    return result


def test_instances_of_one_fixture_do_not_see_each_others_writes():
    with shop.instance("tiny") as a, shop.instance("tiny") as b:
        assert a.call("set_status", order_id=1, status="shipped").ok
        assert a.query("SELECT status FROM orders WHERE id = 1") == [{"status": "shipped"}]
        assert b.query("SELECT status FROM orders WHERE id = 1") == [{"status": "open"}]
        assert b.diff().is_empty


def test_hundreds_of_instances_live_at_once():
    instances = [shop.instance("tiny", seed=i) for i in range(300)]
    for i, inst in enumerate(instances):
        inst.call("place_order", customer_id="C1", total=float(i))
    assert {inst.diff().table("orders").inserted[0]["total"] for inst in instances} == {
        float(i) for i in range(300)
    }
    for inst in instances:
        inst.close()


notes = World(name="notes", schema="CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);")


@notes.tool(writes=True)
def add_note(ctx: ToolContext, body: str) -> dict:
    """Add a note."""
    return {"id": ctx.execute("INSERT INTO notes (body) VALUES (?)", (body,)).lastrowid}


@notes.tool(writes=True)
def triple_every_note(ctx: ToolContext) -> dict:
    """Make every note three times as long."""
    ctx.execute("UPDATE notes SET body = body || body || body")
    return {}


@notes.fixture("thousand", epoch="2026-03-02 09:00:00")
def thousand(fx: FixtureContext) -> None:
    """A thousand notes of a kilobyte each: a fixture of about a megabyte."""
    fx.insert("notes", [{"id": i, "body": f"{i:04d}" + "x" * 1000} for i in range(1000)])


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads the resident size from /proc")
def test_live_instances_share_their_fixtures_bytes_instead_of_copying_them():
    size = len(notes.load_fixture("thousand").parts["main"])
    with notes.instance("thousand") as warm:
        warm.call("add_note", body="warm-up")
    gc.collect()
    before = resident_bytes()
    instances = [notes.instance("thousand", seed=i) for i in range(40)]
    for inst in instances:
        assert inst.call("add_note", body="one write each").ok
    per_instance = (resident_bytes() - before) / len(instances)
    for inst in instances:
        inst.close()
    assert per_instance < size / 4


def test_a_write_bigger_than_the_page_cache_stays_inside_its_instance():
    with notes.instance("thousand") as writer, notes.instance("thousand") as reader:
        assert writer.call("triple_every_note").ok
        assert writer.query("SELECT min(length(body)) AS n FROM notes") == [{"n": 3012}]
        assert reader.query("SELECT max(length(body)) AS n FROM notes") == [{"n": 1004}]
    with notes.instance("thousand") as fresh:
        assert fresh.query("SELECT max(length(body)) AS n FROM notes") == [{"n": 1004}]


def test_a_raising_tool_rolls_back_every_write_and_the_instance_stays_usable():
    with shop.instance("tiny") as inst:
        result = inst.call("credit_then_fail", customer_id="C1", amount=5.0)
        assert not result.ok
        assert result.error.type == "world_bug"
        assert "bug after a write" in result.error.message
        assert inst.query("SELECT credit FROM customers WHERE id = 'C1'") == [{"credit": 0.0}]
        assert inst.diff().is_empty
        assert inst.call("set_status", order_id=2, status="paid").ok
        assert inst.diff().summary() == {"orders": {"inserted": 0, "updated": 1, "deleted": 0}}


def test_a_tool_error_reaches_the_caller_as_a_structured_error():
    with shop.instance("tiny") as inst:
        result = inst.call("get_customer", customer_id="nobody")
        assert result.error.type == "not_found"
        assert '"type":"not_found"' in result.for_model()  # compact: the agent reads every character


def test_bad_arguments_and_unknown_tools_are_errors_not_crashes():
    with shop.instance("tiny") as inst:
        bad = inst.call("place_order", customer_id="C1", total="lots", tip=3)
        assert bad.error.type == "invalid_arguments"
        assert "total" in bad.error.message and "tip: unknown argument" in bad.error.message
        unknown = inst.call("refund_everything")
        assert unknown.error.type == "unknown_tool"
        assert "get_customer" in unknown.error.message
        assert len(inst.log) == 2 and inst.diff().is_empty


def test_a_read_only_tool_that_writes_is_reported_as_a_world_bug_and_undone():
    with shop.instance("tiny") as inst:
        assert inst.call("sneaky_reader", customer_id="C1").error.type == "world_bug"
        assert inst.diff().is_empty


@pytest.mark.parametrize("then_fail", [True, False])
@pytest.mark.parametrize(
    "sql",
    [
        "COMMIT",
        "ROLLBACK",
        "RELEASE atoll_call",
        "ROLLBACK TO atoll_call",
        "BEGIN",
        "SAVEPOINT mine",
        "PRAGMA cache_spill = ON",
    ],
)
def test_a_tool_that_runs_transaction_control_is_a_world_bug_and_changes_nothing(sql, then_fail):
    with shop.instance("tiny") as inst:
        result = inst.call("credit_and_run", customer_id="C1", sql=sql, then_fail=then_fail)
        assert inst.query("SELECT credit FROM customers WHERE id = 'C1'") == [{"credit": 0.0}]
        assert inst.diff().is_empty
        assert result.error.type == "world_bug" and f"{sql.split()[0]} " in result.error.message
        assert inst.call("set_status", order_id=1, status="paid").ok
        assert inst.diff().summary() == {"orders": {"inserted": 0, "updated": 1, "deleted": 0}}
    with shop.instance("tiny") as fresh:
        assert fresh.query("SELECT credit FROM customers WHERE id = 'C1'") == [{"credit": 0.0}]


@pytest.mark.parametrize("sql", ["COMMIT", "ROLLBACK", "RELEASE atoll_call"])
def test_a_query_cannot_end_the_instances_transaction(sql):
    with shop.instance("tiny") as inst:
        inst.call("set_status", order_id=1, status="paid")
        with pytest.raises(sqlite3.DatabaseError, match="refused"):
            inst.query(sql)
        assert inst.query("SELECT status FROM orders WHERE id = 1") == [{"status": "paid"}]
    with shop.instance("tiny") as fresh:
        assert fresh.query("SELECT status FROM orders WHERE id = 1") == [{"status": "open"}]


def check_a_transaction_sqlite_rolled_back_closes_its_instance_and_leaks_no_write() -> None:
    inst = shop.instance("tiny")  # first, so that it gets the connection pooled last
    with shop.instance("tiny") as other:
        assert inst.call("interrupt_then_write", customer_id="C1").error.type == "world_bug"
        with pytest.raises(InstanceClosed, match="lost its transaction"):
            inst.call("set_status", order_id=1, status="paid")
        assert other.query("SELECT credit FROM customers WHERE id = 'C1'") == [{"credit": 0.0}]
    with shop.instance("tiny") as fresh:
        assert fresh.query("SELECT credit FROM customers WHERE id = 'C1'") == [{"credit": 0.0}]


def test_an_instance_whose_transaction_sqlite_rolled_back_closes_and_leaks_no_write():
    check_a_transaction_sqlite_rolled_back_closes_its_instance_and_leaks_no_write()


def test_a_tool_that_switches_to_autocommit_leaves_no_connection_that_would_leak():
    with shop.instance("tiny") as inst:
        assert inst.call("switch_to_autocommit").error.type == "world_bug"
    check_a_transaction_sqlite_rolled_back_closes_its_instance_and_leaks_no_write()


def test_the_log_records_each_calls_row_changes_in_order():
    with shop.instance("tiny") as inst:
        inst.call("place_order", customer_id="C1", total=12.0)
        inst.call("set_status", order_id=6, status="paid")
        inst.call("delete_order", order_id=6)
        assert [(c.op, c.key) for record in inst.log for c in record.changes] == [
            ("insert", {"id": 6}),
            ("update", {"id": 6}),
            ("delete", {"id": 6}),
        ]
        assert inst.log[1].changes[0].before == {"status": "open"}
        assert inst.diff().is_empty  # inserted then deleted: no net change


writes = st.one_of(
    st.tuples(
        st.just("place_order"),
        st.fixed_dictionaries(
            {
                "customer_id": st.sampled_from(["C1", "C2", "C3", "C9"]),
                "total": st.floats(0, 500, allow_nan=False),
            }
        ),
    ),
    st.tuples(
        st.just("set_status"),
        st.fixed_dictionaries(
            {"order_id": st.integers(1, 9), "status": st.sampled_from(["open", "paid", "void"])}
        ),
    ),
    st.tuples(st.just("delete_order"), st.fixed_dictionaries({"order_id": st.integers(1, 9)})),
    st.tuples(st.just("add_customer"), st.fixed_dictionaries({"name": st.text(max_size=8)})),
    st.tuples(
        st.just("credit_then_fail"),
        st.fixed_dictionaries({"customer_id": st.just("C1"), "amount": st.just(1.0)}),
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(writes, max_size=12))
def test_the_diff_equals_a_full_comparison_of_the_two_databases(calls):
    with shop.instance("tiny", seed=3) as inst:
        for name, args in calls:
            inst.call(name, **args)
        assert inst.diff().model_dump()["tables"] == full_comparison(shop, inst)


def test_same_fixture_seed_and_calls_give_the_same_diff_and_ids_byte_for_byte():
    def episode(seed: int) -> str:
        with shop.instance("tiny", seed=seed) as inst:
            inst.call("add_customer", name="Ann")
            inst.call("add_customer", name="Bob")
            inst.call("place_order", customer_id="C1", total=3.5)
            return inst.diff().model_dump_json()

    assert episode(7) == episode(7)
    assert episode(7) != episode(8)  # the seed picks the ids


def test_sql_date_functions_and_tools_see_the_instance_clock():
    with shop.instance("tiny", clock="fixed") as inst:
        assert inst.call("sql_today").value == {"sql_now": "2026-03-02 09:00:00", "tomorrow": "2026-03-03"}
        assert (
            inst.call("place_order", customer_id="C1", total=1.0).value["created_at"] == "2026-03-02 09:00:00"
        )
    with shop.instance("tiny", clock="tick") as inst:
        inst.call("sql_today")
        assert inst.call("sql_today").value["sql_now"] == "2026-03-02 09:01:00"
        inst.call("place_order", customer_id="C1", total=1.0)
        assert inst.diff().table("orders").inserted[0]["created_at"] == "2026-03-02 09:02:00"
    with shop.instance("tiny", clock=Clock.parse("fixed@2030-01-01 00:00:00")) as inst:
        assert inst.query("SELECT date('now') AS d") == [{"d": "2030-01-01"}]


def test_an_included_world_mounts_under_its_prefix_with_its_tools():
    assert set(loyalty.tables) == {"members", "shop.customers", "shop.orders"}
    assert "shop_place_order" in loyalty.tools and "award" in loyalty.tools
    with loyalty.instance("tiny") as inst:
        assert inst.call("award", customer_id="C2", points=5).ok
        assert inst.call("shop_place_order", customer_id="C2", total=9.0).ok
        assert inst.call("award", customer_id="nobody", points=5).error.type == "not_found"
        diff = inst.diff()
        assert diff.table("members").inserted == [{"customer_id": "C2", "points": 5}]
        assert diff.table("shop.orders").inserted[0]["total"] == 9.0


def test_tools_come_with_openai_schemas_built_from_signature_and_docstring():
    with shop.instance("tiny") as inst:
        schema = {s["function"]["name"]: s["function"] for s in inst.tools()}["get_customer"]
    assert schema["description"] == "Look up a customer."
    assert schema["parameters"]["properties"]["customer_id"] == {
        "type": "string",
        "description": 'The customer\'s id, like "C1".',
    }
    assert schema["parameters"]["required"] == ["customer_id"]


def test_a_table_without_a_primary_key_is_refused_when_the_world_loads():
    world = World(name="bad", schema="CREATE TABLE notes (body TEXT);")
    with pytest.raises(WorldDefinitionError, match="'notes' has no PRIMARY KEY"):
        get_world(world)


def test_a_schema_that_does_not_parse_names_the_world_and_the_error():
    world = World(name="typo", schema="CREATE TABEL x (id INTEGER PRIMARY KEY);")
    with pytest.raises(WorldDefinitionError, match="world 'typo' schema.*syntax error"):
        world.validate()


def test_a_tool_with_an_unknown_argument_type_is_refused_at_registration():
    world = World(name="t", schema="CREATE TABLE x (id INTEGER PRIMARY KEY);")
    with pytest.raises(WorldDefinitionError, match="tool 'lookup'.*parameter 'conn'"):

        @world.tool(writes=False)
        def lookup(ctx: ToolContext, conn: sqlite3.Connection) -> dict:
            """Look something up."""
            return {}

    with pytest.raises(WorldDefinitionError, match="parameter 'n' needs a type annotation"):

        @world.tool(writes=False)
        def untyped(ctx: ToolContext, n) -> dict:
            """No annotation."""
            return {}


def test_a_missing_fixture_or_world_is_named_with_what_exists():
    with pytest.raises(UnknownFixture, match="no fixture 'huge'; it has: tiny"):
        shop.instance("huge")
    with pytest.raises(UnknownWorld, match="no world 'atlantis'"):
        get_world("atlantis")


def test_fixtures_are_cached_on_disk_and_rebuilt_when_the_builder_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("ATOLL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(
        module: str, value: str, schema: str = "CREATE TABLE x (id INTEGER PRIMARY KEY, v TEXT);"
    ) -> World:
        (tmp_path / f"{module}.py").write_text(
            f"def build(fx):\n    fx.insert('x', [{{'id': 1, 'v': {value!r}}}])\n"
        )
        world = World(name="cached", schema=schema)
        world.fixture("f", epoch="2026-01-01 00:00:00")(importlib.import_module(module).build)
        return world

    first = make("builder_a", "a").load_fixture("f")
    assert make("builder_a", "a").load_fixture("f").sha256 == first.sha256
    records = lambda: sorted((tmp_path / "cache" / "fixtures" / "cached").glob("*.json"))  # noqa: E731
    assert len(records()) == 1
    edited = make("builder_b", "b")
    assert edited.instance("f").query("SELECT v FROM x") == [{"v": "b"}]
    assert len(records()) == 2
    reshaped = make("builder_a", "a", schema="CREATE TABLE x (id INTEGER PRIMARY KEY, v TEXT, w TEXT);")
    assert reshaped.load_fixture("f").sha256 != first.sha256
    assert len(records()) == 3


def test_a_fixture_build_is_deterministic():
    world = World(name="det", schema="CREATE TABLE x (id INTEGER PRIMARY KEY, v REAL);")

    @world.fixture("f", epoch="2026-01-01 00:00:00", seed=5)
    def build(fx: FixtureContext) -> None:
        fx.insert("x", [{"id": i, "v": fx.rng.random()} for i in range(50)])

    assert world._build(world.fixtures["f"]).sha256 == world._build(world.fixtures["f"]).sha256


def test_only_packages_with_a_world_are_listed_as_worlds():
    from atoll.worlds import list_worlds

    assert list_worlds() == ["clinic", "helpdesk", "payments", "tau2_airline", "tau2_retail"]


def test_a_closed_instance_refuses_calls_and_cannot_leak_writes_into_the_next():
    first = shop.instance("tiny")
    first.call("set_status", order_id=1, status="shipped")
    first.close()
    with pytest.raises(InstanceClosed):
        first.call("set_status", order_id=2, status="void")
    with pytest.raises(InstanceClosed):
        first.query("SELECT 1")
    assert first.diff().summary() == {"orders": {"inserted": 0, "updated": 1, "deleted": 0}}
    with shop.instance("tiny") as second:
        assert second.query("SELECT status FROM orders WHERE id IN (1, 2) ORDER BY id") == [
            {"status": "open"},
            {"status": "open"},
        ]
