"""User tools: a user's profile, and the certificate an agent may send as compensation."""

from atoll.worlds import ToolContext, ToolError

from ...tau2_calls import tool
from ..records import user_record
from ..world import world
from . import _lookup
from ._models import Certificate

NEW_CERTIFICATE_NUMBERS = (3221322, 3221323, 3221324)  # τ² assumes at most three certificates per task


@tool(world, writes=False)
def get_user_details(ctx: ToolContext, user_id: str) -> dict:
    """Get the details of a user, including their reservations.

    Args:
        user_id: The user ID, such as 'sara_doe_496'.
    """
    return user_record(ctx.rows, _lookup.user(ctx, user_id)["user_id"])


@tool(world, writes=True)
def send_certificate(ctx: ToolContext, user_id: str, amount: int) -> str:
    """Send a certificate to a user. Be careful!

    Args:
        user_id: The ID of the user to book the reservation, such as 'sara_doe_496'.
        amount: The amount of the certificate to send.
    """
    user = _lookup.user(ctx, user_id)["user_id"]
    for number in NEW_CERTIFICATE_NUMBERS:
        payment_id = f"certificate_{number}"
        if _lookup.payment_method(ctx, user, payment_id) is None:
            certificate = Certificate(id=payment_id, amount=amount, source="certificate")
            ctx.execute(
                "INSERT INTO payment_methods (user_id, id, position, source, amount) VALUES (?, ?, "
                "(SELECT coalesce(max(position), -1) + 1 FROM payment_methods WHERE user_id = ?), 'certificate', ?)",
                (user, payment_id, user, certificate.amount),
            )
            # The amount as given, in Python's words: 50 reads "50", 50.0 "50.0", as in τ²'s answer.
            return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
    raise ToolError("invalid_request", "Too many certificates")
