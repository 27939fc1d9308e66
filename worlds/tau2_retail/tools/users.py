"""User tools: finding a user id, reading a profile and changing its default address."""

from atoll.worlds import ToolContext, ToolError

from ...tau2_calls import tool
from ..records import user_record
from ..world import world
from . import _lookup
from ._models import UserAddress


@tool(world, writes=False)
def find_user_id_by_name_zip(ctx: ToolContext, first_name: str, last_name: str, zip: str) -> str:
    """Find user id by first name, last name, and zip code. If the user is not found, the function

    will return an error message. By default, find user id by email, and only call this function
    if the user is not found by email or cannot remember email.

    Args:
        first_name: The first name of the customer, such as 'John'.
        last_name: The last name of the customer, such as 'Doe'.
        zip: The zip code of the customer, such as '12345'.
    """
    # τ²'s test, in τ²'s order: names as Python lowercases them (SQLite's lower() knows only ASCII), then the
    # zip; a name that is no text fails as τ²'s `.lower()` fails, once a user's first name is compared.
    for row in ctx.rows("SELECT user_id, first_name, last_name, zip FROM users ORDER BY position"):
        if (
            row["first_name"].lower() == first_name.lower()
            and row["last_name"].lower() == last_name.lower()
            and row["zip"] == zip
        ):
            return row["user_id"]
    raise ToolError("not_found", "User not found")


@tool(world, writes=False)
def find_user_id_by_email(ctx: ToolContext, email: str) -> str:
    """Find user id by email. If the user is not found, the function will return an error message.

    Args:
        email: The email of the user, such as 'something@example.com'.
    """
    wanted = email.lower()
    for row in ctx.rows("SELECT user_id, email FROM users ORDER BY position"):
        if row["email"].lower() == wanted:
            return row["user_id"]
    raise ToolError("not_found", "User not found")


@tool(world, writes=False)
def get_user_details(ctx: ToolContext, user_id: str) -> dict:
    """Get the details of a user, including their orders.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
    """
    return user_record(ctx.rows, _lookup.user(ctx, user_id)["user_id"])


@tool(world, writes=True)
def modify_user_address(
    ctx: ToolContext,
    user_id: str,
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,
) -> dict:
    """Modify the default address of a user. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
        address1: The first line of the address, such as '123 Main St'.
        address2: The second line of the address, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    user_id = _lookup.user(ctx, user_id)["user_id"]
    address = UserAddress(
        address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
    )
    ctx.execute(
        "UPDATE users SET address1 = ?, address2 = ?, city = ?, state = ?, country = ?, zip = ? WHERE user_id = ?",
        (
            address.address1,
            address.address2,
            address.city,
            address.state,
            address.country,
            address.zip,
            user_id,
        ),
    )
    return user_record(ctx.rows, user_id)
