"""A world whose writes reach rows no statement names: cascades, REPLACE, its own triggers, statement
rollbacks, a generated column and a composite key without rowid, for the change-capture tests."""

from __future__ import annotations

import contextlib
import sqlite3

from atoll.worlds import FixtureContext, ToolContext, World

SCHEMA = """
CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    shout TEXT GENERATED ALWAYS AS (upper(name)) VIRTUAL
);
CREATE TABLE tags (
    lowered TEXT GENERATED ALWAYS AS (lower(label)) VIRTUAL,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    label TEXT NOT NULL,
    PRIMARY KEY (account_id, label)
) WITHOUT ROWID;
CREATE TABLE audit (id INTEGER PRIMARY KEY, account_id TEXT NOT NULL, name TEXT NOT NULL);
CREATE TRIGGER accounts_renamed AFTER UPDATE OF name ON accounts
BEGIN INSERT INTO audit (account_id, name) VALUES (NEW.id, NEW.name); END;
"""

ledger = World(name="ledger", version="1", schema=SCHEMA)


@ledger.tool(writes=True)
def rename(ctx: ToolContext, account_id: str, name: str) -> dict:
    """Rename an account (the world's own trigger audits it)."""
    ctx.execute("UPDATE accounts SET name = ? WHERE id = ?", (name, account_id))
    return {}


@ledger.tool(writes=True)
def close_account(ctx: ToolContext, account_id: str) -> dict:
    """Delete an account; its tags go with it by cascade."""
    ctx.execute("DELETE FROM accounts WHERE id = ?", (account_id,))
    return {}


@ledger.tool(writes=True)
def take_over_email(ctx: ToolContext, account_id: str, name: str, email: str) -> dict:
    """INSERT OR REPLACE: the account holding `email` is deleted (and its tags by cascade)."""
    ctx.execute(
        "INSERT OR REPLACE INTO accounts (id, name, email) VALUES (?, ?, ?)", (account_id, name, email)
    )
    return {}


@ledger.tool(writes=True)
def tag(ctx: ToolContext, account_id: str, label: str) -> dict:
    """Tag an account."""
    ctx.execute("INSERT INTO tags (account_id, label) VALUES (?, ?)", (account_id, label))
    return {}


@ledger.tool(writes=True)
def try_one_email_for_all(ctx: ToolContext) -> dict:
    """A statement that fails on its second row (SQLite undoes its first), then a write that stands."""
    with contextlib.suppress(sqlite3.IntegrityError):
        ctx.execute("UPDATE accounts SET email = 'same@example.com'")
    ctx.execute("UPDATE accounts SET name = name || '!' WHERE id = 'A3'")
    return {}


@ledger.fixture("three", epoch="2026-03-02 09:00:00")
def three(fx: FixtureContext) -> None:
    """Three accounts, two tags each."""
    fx.insert(
        "accounts",
        [{"id": f"A{i}", "name": f"Account {i}", "email": f"a{i}@example.com"} for i in range(1, 4)],
    )
    fx.insert(
        "tags", [{"account_id": f"A{i}", "label": label} for i in range(1, 4) for label in ("Red", "Blue")]
    )


def episode(instance) -> None:
    """Every kind of indirect write once."""
    instance.call("rename", account_id="A1", name="First")
    instance.call("close_account", account_id="A2")
    instance.call("take_over_email", account_id="A9", name="Nine", email="a1@example.com")
    instance.call("tag", account_id="A3", label="Green")
    instance.call("try_one_email_for_all")
