"""τ²'s airline models that its tools build from the agent's arguments, field for field, so that what
they accept, coerce ("2" to 2 for an int field) and refuse (pydantic's text, naming the model) is τ²'s.

They also type the tools' parameters, so the schemas an agent sees are τ²'s: τ² types list arguments as
`List[FlightInfo | dict]` and converts the dicts itself.
"""

from typing import Literal

from pydantic import BaseModel, Field

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


class Certificate(BaseModel):
    source: Literal["certificate"]
    id: str
    amount: float


class ReservationFlight(BaseModel):
    flight_number: str
    origin: str
    destination: str
    date: str
    price: int


class Reservation(BaseModel):
    """What book_reservation validates its arguments with, all at once, before it checks any flight."""

    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: FlightType
    cabin: CabinClass
    flights: list[ReservationFlight]
    passengers: list[Passenger]
    payment_history: list[Payment]
    created_at: str
    total_baggages: int
    nonfree_baggages: int
    insurance: Insurance
    status: Literal["cancelled"] | None = None
