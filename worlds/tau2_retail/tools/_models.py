"""τ²'s retail models that its tools build from the agent's arguments, field for field, so that what
they accept and refuse (pydantic's text, naming the model) is τ²'s."""

from typing import Literal

from pydantic import BaseModel, Field


class UserAddress(BaseModel):
    """Represents a physical address"""

    address1: str = Field(description="Primary address line")
    address2: str = Field(description="Secondary address line")
    city: str = Field(description="City name")
    country: str = Field(description="Country name")
    state: str = Field(description="State or province name")
    zip: str = Field(description="Postal code")


class OrderPayment(BaseModel):
    """Represents a payment or refund transaction for an order"""

    transaction_type: Literal["payment", "refund"] = Field(
        description="Type of transaction (payment or refund)"
    )
    amount: float = Field(description="Amount of the transaction")
    payment_method_id: str = Field(description="ID of the payment method used")
