"""The argument types of the airline tools, shaped as τ²'s so the schemas an agent sees are τ²'s.

τ² types list arguments as `List[FlightInfo | dict]` and converts the dicts itself, so a malformed
flight is refused with pydantic's own text; `convert` does the same here.
"""

from typing import Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from atoll.worlds import ToolError

FlightType = Literal["round_trip", "one_way"]
CabinClass = Literal["business", "economy", "basic_economy"]
Insurance = Literal["yes", "no"]


class FlightInfo(BaseModel):
    flight_number: str = Field(description="Flight number, such as 'HAT001'.")
    date: str = Field(description="The date for the flight in the format 'YYYY-MM-DD', such as '2024-05-01'.")


class Passenger(BaseModel):
    first_name: str = Field(description="Passenger's first name")
    last_name: str = Field(description="Passenger's last name")
    dob: str = Field(description="Date of birth in YYYY-MM-DD format")


class Payment(BaseModel):
    payment_id: str = Field(description="Unique identifier for the payment")
    amount: int = Field(description="Payment amount in dollars")


Model = TypeVar("Model", bound=BaseModel)


def convert(model: type[Model], items: list[Model | dict]) -> list[Model]:
    """Each item as `model`, refusing the first malformed one with the text τ²'s conversion raises."""
    try:
        return [item if isinstance(item, model) else model(**item) for item in items]
    except ValidationError as error:
        raise ToolError("invalid_argument", str(error)) from None
