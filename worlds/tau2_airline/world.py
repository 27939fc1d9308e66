"""The tau2_airline world's declaration: τ²-bench's airline schema and its policy, word for word."""

from pathlib import Path

from atoll.worlds import World

from ..tau2 import policy

HERE = Path(__file__).parent

world = World(
    name="tau2_airline",
    version="1",
    description=(
        "τ²-bench's airline (Sierra Research, MIT): flights by date with seats and prices, users with "
        "payment methods and saved passengers, and reservations; tools as τ²'s."
    ),
    schema=HERE / "schema.sql",
    documents={"policy": policy("airline")},
    observation="text",  # the agent reads a result as τ²'s agent does: `Error: …`, a text unquoted
)
