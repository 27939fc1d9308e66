"""The helpdesk landmark stories as data: landmarks.yaml is checked when it loads, a slip names the
file and the field, and the catalogue in fixtures.py's docstring says what the built fixture holds."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from atoll.worlds import WorldDefinitionError, get_world
from atoll.worlds.helpdesk import fixtures, landmarks

GOOD = yaml.safe_load(landmarks.PATH.read_text(encoding="utf-8"))

# (what to break, the field the message must name, a phrase it must hold)
MALFORMED: list[tuple[Callable[[dict], object], str, str]] = [
    (lambda d: d["people"]["maya"].update(pin=4821), "people.maya.pin", "valid string"),
    (lambda d: d["people"]["maya"].pop("email"), "people.maya.email", "required"),
    (lambda d: d["orders"][0]["tickets"][0].update(channel="fax"), "orders[0].tickets[0].channel", "'fax'"),
    (lambda d: d["orders"][0]["tickets"][0].update(colour="red"), "orders[0].tickets[0].colour", "unknown"),
    (lambda d: d["orders"][3].update(placed="twenty hours ago"), "orders[3].placed", "is not a time"),
    (lambda d: d["orders"][0]["lines"][0].update(variant="Slat"), "orders[0].lines[0]", "no product SDP"),
    (lambda d: d["orders"][0].update(carrier="DHL"), "orders[0].carrier", "no carrier 'DHL'"),
    (lambda d: d["orders"][1].update(customer="danny"), "orders[1].customer", "no person 'danny'"),
    (lambda d: d["orders"][1].update(number=1085), "orders[1].number", "taken by orders[0].number"),
    (lambda d: d["orders"][0]["tickets"][0].pop("policy"), "orders[0].tickets[0]", "needs policy"),
    (lambda d: d["orders"][0]["tickets"][0].update(body="{ordr}"), "orders[0].tickets[0].body", "{ordr}"),
    (lambda d: d["people"]["minh"].pop("note"), "people.minh", "needs a note"),
]


def _write(tmp_path: Path, records: dict) -> Path:
    path = tmp_path / "landmarks.yaml"
    path.write_text(yaml.safe_dump(records, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def test_the_shipped_landmark_file_loads_cleanly():
    assert landmarks.load() == landmarks.LANDMARKS
    assert landmarks.LANDMARKS.people and landmarks.LANDMARKS.orders


@pytest.mark.parametrize(("break_it", "field", "phrase"), MALFORMED)
def test_a_malformed_landmark_record_fails_naming_the_file_and_the_field(tmp_path, break_it, field, phrase):
    records = copy.deepcopy(GOOD)
    break_it(records)
    path = _write(tmp_path, records)
    with pytest.raises(WorldDefinitionError) as caught:
        landmarks.load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: "), message
    assert f"{field}: " in message and phrase in message, message


def test_a_landmark_file_that_is_not_yaml_fails_naming_the_file_and_the_line(tmp_path):
    path = tmp_path / "landmarks.yaml"
    path.write_text("stock: []\npeople: [\n  maya: {\n", encoding="utf-8")
    with pytest.raises(WorldDefinitionError, match=re.escape(f"{path}: line ")):
        landmarks.load(path)


def test_the_catalogue_in_the_fixtures_docstring_is_generated_from_the_data_file():
    assert fixtures.__doc__.rstrip().endswith(landmarks.catalogue())
    emails = re.findall(r"^- [^(]+\(([^,]+),", landmarks.catalogue(), re.MULTILINE)
    assert sorted(emails) == sorted(p.email for p in landmarks.LANDMARKS.people.values())


def test_each_catalogue_entry_names_the_ids_and_identity_facts_the_built_fixture_holds():
    entry = re.compile(
        r"- [^(]+\((?P<email>[^,]+), (?P<customer>CUS-\d+); PIN (?P<pin>\d+), born (?P<born>[\d-]+), "
        r"phone ends (?P<phone>\d{4})[^)]*\): (?:TKT-(?P<ticket>\d+) on )?ORD-(?P<order>\d+)(?: \((?P<whose>\w+)'s\))?"
    )
    entries = [" ".join(e.split()) for e in ("\n" + landmarks.catalogue()).split("\n- ")[1:]]
    with get_world("helpdesk").instance("small_shop") as shop:
        for text in entries:
            found = entry.match("- " + text)
            assert found, text
            facts = found.groupdict()
            (person,) = shop.query("SELECT * FROM customers WHERE email = ?", (facts["email"],))
            assert (person["id"], person["support_pin"], person["date_of_birth"]) == (
                facts["customer"],
                facts["pin"],
                facts["born"],
            ), text
            assert person["phone"].endswith(facts["phone"]), text
            order_id = f"ORD-{facts['order']}"
            (order,) = shop.query(
                "SELECT o.customer_id, c.first_name FROM orders o JOIN customers c ON c.id = o.customer_id "
                "WHERE o.id = ?",
                (order_id,),
            )
            if facts["ticket"] is None:
                assert order["customer_id"] == person["id"], text
                continue
            (ticket,) = shop.query(
                "SELECT customer_id, order_id, status FROM tickets WHERE id = ?", (f"TKT-{facts['ticket']}",)
            )
            assert (ticket["customer_id"], ticket["status"]) == (person["id"], "open"), text
            if facts["whose"]:  # someone else's order: named in the text, never linked
                assert (ticket["order_id"], order["first_name"]) == (None, facts["whose"]), text
            else:
                assert ticket["order_id"] == order_id, text
