"""The payments world's declaration: a Stripe account's objects, served as Stripe's REST API and as tools."""

from pathlib import Path

from atoll.worlds import RestFace, World

HERE = Path(__file__).parent

# The API version this world answers as: the one the pinned `stripe` SDK (pyproject's dev extra) sends.
API_VERSION = "2026-10-28.endive"

world = World(
    name="payments",
    version="1",
    description=(
        "The Stripe account of Lumen Yoga Studio: customers, cards, payment intents and charges, refunds, "
        "products and prices, subscriptions and invoices, over Stripe's REST API or as agent tools."
    ),
    schema=HERE / "schema.sql",
    documents={"policy": HERE / "policy.md"},
    rest=RestFace(version=API_VERSION, version_header="Stripe-Version"),
)
