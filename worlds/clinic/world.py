"""The clinic world's declaration: its schema and the desk policy the agent is shown."""

from pathlib import Path

from atoll.worlds import World

HERE = Path(__file__).parent

world = World(
    name="clinic",
    version="1",
    description=(
        "The front desk of Harborview Veterinary Clinic: clients, pets, vets, appointment slots, "
        "bookings, cancellation fees, invoices, payments and notes."
    ),
    schema=HERE / "schema.sql",
    documents={"policy": HERE / "policy.md"},
)
