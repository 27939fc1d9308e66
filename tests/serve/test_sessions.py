"""The session manager: private instances, bounded in number, freed when idle."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atoll.worlds import UnknownFixture, UnknownWorld
from atoll.worlds.serve import (
    NoInstance,
    ResetRequest,
    SessionLimitReached,
    SessionManager,
    UnknownSession,
    WorldCatalog,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def manager(shop, **kwargs) -> SessionManager:
    return SessionManager(WorldCatalog([shop]), **kwargs)


def test_each_session_holds_a_private_instance(shop):
    sessions = manager(shop)
    a, b = sessions.open(), sessions.open()
    a.reset(ResetRequest(world="shop", fixture="tiny"))
    b.reset(ResetRequest(world="shop", fixture="tiny"))
    assert a.require().call("set_status", order_id=1, status="shipped").ok
    assert b.require().query("SELECT status FROM orders WHERE id = 1") == [{"status": "open"}]
    assert b.state()["diff"] == {"tables": {}}


def test_a_bare_reset_restarts_the_same_fixture_and_seed_afresh(shop):
    session = manager(shop).open()
    session.reset(ResetRequest(world="shop", fixture="tiny", seed=4, clock="tick"))
    session.require().call("delete_order", order_id=2)
    session.reset(ResetRequest())
    state = session.state()
    assert (state["fixture"], state["seed"], state["clock"], state["step_count"]) == ("tiny", 4, "tick", 0)
    assert state["diff"] == {"tables": {}}


def test_server_defaults_fill_what_a_reset_leaves_out(shop):
    session = manager(shop, defaults=ResetRequest(world="shop", fixture="tiny", seed=9)).open()
    instance = session.require()
    assert (instance.fixture.name, instance.seed) == ("tiny", 9)


def test_a_reset_naming_no_world_says_which_fields_are_missing(shop):
    session = manager(shop).open()
    with pytest.raises(NoInstance, match="`world` and `fixture`.*worlds: shop"):
        session.reset(ResetRequest())


def test_a_reset_naming_only_a_world_starts_from_its_default_fixture(shop):
    instance = manager(shop).open().reset(ResetRequest(world="shop"))
    assert instance.fixture.name == shop.default_fixture


def test_an_unknown_world_fixture_or_clock_is_refused_by_name(shop):
    session = manager(shop).open()
    with pytest.raises(UnknownWorld, match="no world 'nope'; it offers: shop"):
        session.reset(ResetRequest(world="nope", fixture="tiny"))
    with pytest.raises(UnknownFixture, match="no fixture 'huge'"):
        session.reset(ResetRequest(world="shop", fixture="huge"))
    with pytest.raises(ValueError, match="fixed, tick or wall"):
        session.reset(ResetRequest(world="shop", fixture="tiny", clock="sundial"))
    with pytest.raises(ValueError, match="fixtrue"):
        ResetRequest.model_validate({"world": "shop", "fixtrue": "tiny"})


def test_opening_past_the_limit_is_refused_until_a_session_closes(shop):
    sessions = manager(shop, max_sessions=2)
    first = sessions.open()
    sessions.open()
    with pytest.raises(SessionLimitReached, match="2 sessions are live"):
        sessions.open()
    assert sessions.close(first.id)
    assert sessions.open()
    assert not sessions.close(first.id)


def test_idle_sessions_expire_and_free_their_slot(shop):
    clock = FakeClock()
    sessions = manager(shop, max_sessions=2, idle_seconds=60, clock=clock)
    idle, busy = sessions.open(), sessions.open()
    idle.reset(ResetRequest(world="shop", fixture="tiny"))
    clock.now += 45
    sessions.get(busy.id)  # any use counts as activity
    clock.now += 30
    assert sessions.open()  # the idle one was reaped to make room
    assert idle.closed and idle.instance is None
    with pytest.raises(UnknownSession):
        sessions.get(idle.id)
    assert sessions.get(busy.id) is busy


def test_the_state_document_carries_every_call_and_the_net_diff(shop):
    session = manager(shop).open()
    assert session.state()["world"] is None
    session.reset(ResetRequest(world="shop", fixture="tiny", episode_id="ep-1"))
    instance = session.require()
    instance.call("set_status", order_id=1, status="shipped")
    instance.call("get_customer", customer_id="nobody")
    state = session.state()
    assert state["episode_id"] == "ep-1"
    assert state["step_count"] == 2
    assert [c["tool"] for c in state["calls"]] == ["set_status", "get_customer"]
    assert state["calls"][1]["error"]["type"] == "not_found"
    assert state["diff"]["tables"]["orders"]["updated"] == [
        {"key": {"id": 1}, "before": {"status": "open"}, "after": {"status": "shipped"}}
    ]
    assert state["diff_summary"] == {"orders": {"inserted": 0, "updated": 1, "deleted": 0}}
    assert state["row_counts"] == {"customers": 3, "orders": 5}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["open", "close", "wait"]), max_size=30))
def test_live_sessions_never_exceed_the_limit(shop, steps):
    clock = FakeClock()
    sessions = manager(shop, max_sessions=3, idle_seconds=10, clock=clock)
    opened = []
    for step in steps:
        if step == "open":
            try:
                opened.append(sessions.open().id)
            except SessionLimitReached:
                assert len(sessions) == 3
        elif step == "close" and opened:
            sessions.close(opened.pop(0))
        else:
            clock.now += 6
        assert len(sessions) <= 3
