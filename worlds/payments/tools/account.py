"""The account itself: `/v1/account`, `/v1/balance`, and the agent tools `get_stripe_account_info`,
`retrieve_balance` and `fetch_stripe_resources` (any object by its id)."""

from datetime import timedelta

from atoll.worlds import TIMESTAMP_FORMAT, ToolContext

from ..world import world
from . import _common as c
from . import _fields as f

AVAILABLE_AFTER_DAYS = 2  # a card payment's funds become available this long after the charge


@world.tool(writes=False)
@world.operation("GET", "/v1/account")
def get_stripe_account_info(ctx: ToolContext) -> dict:
    """The Stripe account this world is: the business's name, country, currency and support email."""
    row = ctx.one("SELECT * FROM account")
    modelled = {
        "id": row["id"],
        "object": "account",
        "business_profile": {
            **f.BUSINESS_PROFILE,
            "name": row["business_name"],
            "support_email": row["email"],
            "url": None,
        },
        "business_type": "company",
        "charges_enabled": True,
        "country": row["country"],
        "created": c.unix(row["created"]),
        "default_currency": row["default_currency"],
        "details_submitted": True,
        "email": row["email"],
        "payouts_enabled": True,
        "settings": {
            **f.ACCOUNT_SETTINGS,
            "dashboard": {"display_name": row["business_name"], "timezone": "Etc/UTC"},
        },
        "type": "standard",
    }
    return f.shaped(f.ACCOUNT, modelled)


@world.tool(writes=False)
@world.operation("GET", "/v1/balance")
def retrieve_balance(ctx: ToolContext) -> dict:
    """The account's balance: card payments less refunds, available two days after each charge, pending before."""
    cutoff = (ctx.now() - timedelta(days=AVAILABLE_AFTER_DAYS)).strftime(TIMESTAMP_FORMAT)
    sums = ctx.one(
        "SELECT coalesce(sum(CASE WHEN created <= ? THEN amount_captured - amount_refunded END), 0) AS available, "
        "coalesce(sum(CASE WHEN created > ? THEN amount_captured - amount_refunded END), 0) AS pending "
        "FROM charges WHERE status = 'succeeded'",
        (cutoff, cutoff),
    )
    modelled = {
        "object": "balance",
        "available": [
            {
                "amount": sums["available"],
                "currency": "usd",
                "source_types": f.shaped(f.SOURCE_TYPES, {"card": sums["available"]}),
            }
        ],
        "livemode": False,
        "pending": [
            {
                "amount": sums["pending"],
                "currency": "usd",
                "source_types": f.shaped(f.SOURCE_TYPES, {"card": sums["pending"]}),
            }
        ],
    }
    return f.shaped(f.BALANCE, modelled)


@world.tool(writes=False)
def fetch_stripe_resources(ctx: ToolContext, id: str, expand: c.Expand | None = None) -> dict:
    """Fetch any object by its id: a customer (cus_), card (pm_), payment intent (pi_), charge (ch_), refund (re_),
    product (prod_), price (price_), subscription (sub_), invoice (in_) or invoice item (ii_).

    Args:
        id: The object's id.
        expand: Fields to expand, such as `latest_charge` on a payment intent.
    """
    return c.expanded(ctx, c.load(ctx, id), expand)
