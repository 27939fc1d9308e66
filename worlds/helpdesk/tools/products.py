"""Product tools: the catalogue with prices, variants and stock."""

from atoll.worlds import ToolContext, ToolError

from ..world import world
from . import _common as c

_COLUMNS = "id, sku, name, variant, category, price, stock, final_sale"


@world.tool(writes=False)
def get_product(ctx: ToolContext, product_id: str) -> dict:
    """Show a product with its price, stock and final-sale flag, and every variant of it.

    Variants are the other sizes or colours of the same product, each with its own id and stock.

    Args:
        product_id: The product id, for example "PRD-1047".
    """
    row = c.product(ctx, product_id)
    variants = ctx.rows(f"SELECT {_COLUMNS} FROM products WHERE family = ? ORDER BY id", (row["family"],))
    for variant in (row, *variants):
        variant["final_sale"] = bool(variant["final_sale"])
    return {
        **{k: row[k] for k in ("id", "sku", "name", "variant", "category", "price", "stock", "final_sale")},
        "variants": [{k: v[k] for k in ("id", "variant", "stock")} for v in variants],
    }


@world.tool(writes=False)
def search_products(
    ctx: ToolContext,
    query: str | None = None,
    category: str | None = None,
    in_stock_only: bool = False,
    limit: int = 20,
) -> list[dict]:
    """Search the catalogue by words in the product name or variant, and by category.

    Categories: Kitchen, Home, Apparel, Footwear, Outdoor, Electronics, Bath & Body, Accessories, Clearance.

    Args:
        query: Words to find in the name or variant, for example "sweater navy".
        category: Only this category, for example "Footwear".
        in_stock_only: Leave out variants with no stock.
        limit: At most this many products (1 to 100).
    """
    if not 1 <= limit <= 100:
        raise ToolError("invalid_argument", "limit must be between 1 and 100.", field="limit")
    clauses, params = [], []
    for word in (query or "").split():
        clauses.append("(name || ' ' || variant) LIKE ?")
        params.append(f"%{word}%")
    if category:
        clauses.append("lower(category) = lower(?)")
        params.append(category.strip())
    if in_stock_only:
        clauses.append("stock > 0")
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = ctx.rows(f"SELECT {_COLUMNS} FROM products{where} ORDER BY id LIMIT ?", (*params, limit))
    for row in rows:
        row["final_sale"] = bool(row["final_sale"])
    return rows
