"""The helpdesk world's declaration: its schema and the policy document the agent is shown."""

from pathlib import Path

from atoll.worlds import World

HERE = Path(__file__).parent

world = World(
    name="helpdesk",
    version="1",
    description=(
        "The support desk of Larkspur Goods, an online shop: customers, orders, payments, shipments, "
        "refunds, returns, exchanges, store credit and support tickets."
    ),
    schema=HERE / "schema.sql",
    documents={"policy": HERE / "policy.md"},
)
