"""Product tools: one product with its variants, and the catalogue of product types."""

from atoll.worlds import ToolContext

from ...tau2_calls import tool
from ..records import product_record
from ..world import world
from . import _lookup


@tool(world, writes=False)
def get_product_details(ctx: ToolContext, product_id: str) -> dict:
    """Get the inventory details of a product.

    Args:
        product_id: The product id, such as '6086499569'. Be careful the product id is different from the item id.
    """
    return product_record(ctx.rows, _lookup.product(ctx, product_id)["product_id"])


@tool(world, writes=False)
def list_all_product_types(ctx: ToolContext) -> dict:
    """List the name and product id of all product types.

    Each product type has a variety of different items with unique item ids and options.
    There are only 50 product types in the store.
    """
    # τ² answers a JSON text of this mapping with sorted keys; the mapping in that order reads the same.
    names = {
        row["name"]: row["product_id"]
        for row in ctx.rows("SELECT name, product_id FROM products ORDER BY position")
    }
    return dict(sorted(names.items()))
