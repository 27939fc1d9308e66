"""The tau2_retail world's declaration: τ²-bench's retail schema and its policy, word for word."""

from pathlib import Path

from atoll.worlds import World

from ..tau2 import policy

HERE = Path(__file__).parent

world = World(
    name="tau2_retail",
    version="1",
    description=(
        "τ²-bench's retail store (Sierra Research, MIT): users, payment methods, products and their "
        "variants, and orders with items, fulfillments and payments; tools as τ²'s."
    ),
    schema=HERE / "schema.sql",
    documents={"policy": policy("retail")},
    observation="text",  # the agent reads a result as τ²'s agent does: `Error: …`, a text unquoted
)
