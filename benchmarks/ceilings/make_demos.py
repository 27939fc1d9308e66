"""Write one demo per TRAIN task of evals/helpdesk into a harness's demos/ folder.

Each demo is the task's reference solution run on a fresh small_shop instance (real observations,
compacted to the fields an agent needs), without the optional ticket bookkeeping, and a final reply
written by hand here. Only train tasks are read; val and test tasks never become demo material.

    python benchmarks/ceilings/make_demos.py benchmarks/ceilings/support_agent_qwen
"""

from __future__ import annotations

import glob
import re
import sys
from pathlib import Path

import yaml

from atoll.worlds import get_world

SKIP = {"reply_to_ticket", "close_ticket"}

# Per train task: the reply after the calls, or for a multi-turn task a list of
# ("reply", text) / ("user", text) / ("calls", n) items (n reference calls to run next).
REPLIES: dict[str, object] = {
    "address-change-pending": "Done: ORD-1100 will now ship to 48 Prospect Park W, Apt 3B, Brooklyn, NY 11215.",
    "cancel-processing-order": "ORD-1098 is cancelled and $300.48 is refunded to your original payment method.",
    "cancel-shipped-order": "I'm sorry, ORD-1093 has already shipped, so it can't be cancelled. You can return it once it arrives.",
    "credit-late-delivery-capped": "I'm sorry ORD-1080 arrived late. Policy allows a one-time $10 store credit for an order under $100, so I've added $10 of store credit to your account.",
    "credit-balance": "You have $90.00 of store credit.",
    "escalate-lost-over-250": "I'm sorry your parcel is lost. Because the order is over $250, I've escalated it to our logistics team, who will follow up within 2 business days.",
    "escalate-refund-over-500": "I'm sorry about the espresso machine. A refund above $500 needs our billing team: I've escalated it, and they will follow up within 2 business days.",
    "escalate-legal-threat": [
        ("calls", 1),
        (
            "reply",
            "I'm sorry about the delay. To help, please give me your support PIN, or two of your date of birth, phone last 4 and ZIP code.",
        ),
        ("user", "My support PIN is 6075, if you need it."),
        ("calls", 99),
        (
            "reply",
            "Thank you. I've escalated this to our legal team; a specialist will follow up within 2 business days.",
        ),
    ],
    "exchange-sweater-size": "Your exchange is arranged: the Navy L is reserved and ships once the M is on its way back.",
    "identity-three-failed-attempts": [
        ("calls", 2),
        (
            "reply",
            "I'm sorry, I could not verify your identity. Please check your support PIN and try again.",
        ),
        ("user", "Sorry, I mixed up the digits. Try 4662."),
        ("calls", 1),
        ("reply", "I'm sorry, that did not verify either. Please try once more."),
        ("user", "Hmm. Then it must be 6624."),
        ("calls", 99),
        (
            "reply",
            "I'm sorry, I could not verify your identity after 3 attempts, so I can't change anything. I've escalated this to our trust and safety team; a specialist will follow up within 2 business days.",
        ),
    ],
    "identity-email-is-not-verification": [
        ("calls", 1),
        (
            "reply",
            "I'm sorry about the scale. An email does not verify your identity: please give me your support PIN, or two of your date of birth, phone last 4 and ZIP code.",
        ),
        ("user", "Sure: my date of birth is 1979-09-09 and my ZIP code is 60201."),
        ("calls", 99),
        (
            "reply",
            "Thank you. I've refunded $49.61 for the Smart Kitchen Scale to your original payment method.",
        ),
    ],
    "identity-namesake-contact-change": "Done: the phone number on your account is now 813-555-0199.",
    "partial-refund-chipped-lamp": "I'm sorry about the chip. I've refunded $24.80, 20% of the lamp's price, to your original payment method, and you keep the lamp.",
    "partial-refund-chipped-containers": "I'm sorry about the chipped lid. I've refunded $8.40, 20% of the containers' price, to your original payment method.",
    "refund-damaged-plates": "I'm sorry the plates arrived cracked. I've refunded $48.00 for the plates to your original payment method.",
    "refund-received-return": "Your return arrived, so I've refunded $172.12 for the duvet cover to your original payment method.",
    "refund-lost-parcel": "I'm sorry your parcel was lost. I've refunded the full $124.41 to your original payment method.",
    "return-plus-member-window": "As a Plus member you are within the 60-day return window. I've started the return: a prepaid return label is in your inbox, and the refund follows once the shoes arrive.",
    "refund-damaged-final-sale-oil": "I'm sorry the bottle arrived cracked. Damage is covered even on final-sale items: I've refunded $34.24 for the body oil to your original payment method.",
    "refuse-return-outside-window": "I'm sorry, ORD-1051 was delivered more than 30 days ago, past our 30-day return window, so I can't start a return.",
    "refuse-return-final-sale": "I'm sorry, I can't return them: the body oil and the socks are final sale, and final-sale items can't be returned for a change of mind.",
    "refuse-cancel-shipped": "I'm sorry, ORD-1092 has already shipped, so it can't be cancelled. You can return it once it arrives.",
    "refuse-address-after-shipping": "I'm sorry, ORD-1096 has already shipped, so I can't change its address. The carrier, FedEx, may be able to redirect it.",
    "refuse-exchange-out-of-stock": "I'm sorry, the Size 9 is out of stock, so I can't exchange them. You can return them instead for a refund.",
    "refuse-other-customers-order": "I'm sorry, I can't share anything about that order: I can only discuss an order with its account holder.",
    "refuse-store-credit-instead-of-refund": "I'm sorry, I can't: the jacket is past the 30-day return window, and store credit can't replace a return outside the window.",
    "status-in-transit": "Your order ORD-1092 has shipped and is in transit with UPS, due by 2026-03-05.",
    "status-delivered": "Yes, ORD-1083 was delivered on 2026-02-23.",
    "status-product-out-of-stock": "I'm sorry, the Smart Kitchen Scale is out of stock right now.",
    "status-promised-date": "Your order ORD-1097 is due to arrive by 2026-03-06.",
}

TITLES: dict[str, str] = {
    "address-change-pending": "Change the shipping address of an order that has not shipped",
    "cancel-processing-order": "Cancel an order that has not shipped yet",
    "cancel-shipped-order": "Cancel an order that already shipped: decline",
    "credit-late-delivery-capped": "Store credit for a late delivery, capped by policy",
    "credit-balance": "How much store credit does the customer have",
    "escalate-lost-over-250": "Lost parcel on an order above $250: escalate to logistics",
    "escalate-refund-over-500": "Refund above $500 for a damaged item: escalate to billing",
    "escalate-legal-threat": "Customer threatens a lawyer or legal action: escalate to legal",
    "exchange-sweater-size": "Exchange an item for another size or colour",
    "identity-three-failed-attempts": "Identity fails three times: escalate to trust_safety",
    "identity-email-is-not-verification": "Email alone does not verify identity: ask for PIN or facts",
    "identity-namesake-contact-change": "Change the phone number or email on the account",
    "partial-refund-chipped-lamp": "Minor damage, customer keeps the item: partial refund of 20%",
    "partial-refund-chipped-containers": "Small chip, customer keeps it: partial refund of 20% of the price",
    "refund-damaged-plates": "Refund an item that arrived damaged, cracked or broken",
    "refund-received-return": "Refund a return the warehouse received",
    "refund-lost-parcel": "Lost parcel, never arrived, order under $250: refund the order",
    "return-plus-member-window": "Change-of-mind return within the window: start a return label",
    "refund-damaged-final-sale-oil": "Damaged final-sale item: refund the item",
    "refuse-return-outside-window": "Return asked after the 30-day window: decline",
    "refuse-return-final-sale": "Return of final-sale items for change of mind: decline",
    "refuse-cancel-shipped": "Cancel an order that has shipped: decline, offer a return",
    "refuse-address-after-shipping": "Change the address of a shipped order: decline, carrier may help",
    "refuse-exchange-out-of-stock": "Exchange for a size that is out of stock: decline, offer a return",
    "refuse-other-customers-order": "Someone asks about another person's order: decline",
    "refuse-store-credit-instead-of-refund": "Store credit instead of a refund outside the window: decline",
    "status-in-transit": "Where is my order, status of an order",
    "status-delivered": "Has my order been delivered",
    "status-product-out-of-stock": "Is a product in stock",
    "status-promised-date": "When will my order arrive",
}

ORDER_KEYS = ["id", "customer_id", "status", "total", "customer", "items", "shipments", "refunds", "returns"]
ITEM_KEYS = ["id", "product_id", "product_name", "status", "final_sale", "refund_value"]
SHIP_KEYS = ["carrier", "status", "promised_date", "delivered_at"]
TRACK_KEYS = ["order_id", "carrier", "status", "promised_date", "delivered_at"]


def compact(tool: str, value):
    """The fields an agent needs from a result; demos stay short."""
    if tool == "get_order" and isinstance(value, dict):
        out = {k: value[k] for k in ORDER_KEYS if k in value}
        out["customer"] = {"tier": value.get("customer", {}).get("tier")}
        out["items"] = [{k: i[k] for k in ITEM_KEYS if k in i} for i in value.get("items", [])]
        out["shipments"] = [{k: s[k] for k in SHIP_KEYS if k in s} for s in value.get("shipments", [])]
        out["refunds"] = [{k: r[k] for k in ("amount", "kind") if k in r} for r in value.get("refunds", [])]
        out["returns"] = [{k: r[k] for k in ("status",) if k in r} for r in value.get("returns", [])]
        if not out["refunds"]:
            del out["refunds"]
        if not out["returns"]:
            del out["returns"]
        return out
    if tool == "track_shipment" and isinstance(value, list):
        return [{k: s[k] for k in TRACK_KEYS if k in s} for s in value]
    if tool == "get_product" and isinstance(value, dict):
        out = {k: value[k] for k in ("id", "name", "variant", "price", "stock", "final_sale")}
        out["variants"] = value.get("variants", [])
        return out
    if tool == "get_store_credit" and isinstance(value, dict):
        return {
            "balance": value["balance"],
            "ledger": [{k: e[k] for k in ("amount", "kind", "created_at")} for e in value.get("ledger", [])],
        }
    if tool == "list_tickets" and isinstance(value, list):
        return [{k: t[k] for k in ("id", "order_id", "subject", "status")} for t in value]
    if isinstance(value, dict):
        drop = {"created_at", "updated_at", "author", "ledger"}
        return {k: v for k, v in value.items() if k not in drop}
    return value


def train_tasks():
    for path in sorted(glob.glob("evals/helpdesk/tasks/*.yaml")):
        for task in yaml.safe_load(Path(path).read_text()):
            if task.get("split") == "train":
                yield task


def run_reference(task) -> list[dict]:
    world = get_world("helpdesk")
    steps = []
    with world.instance(task["fixture"], seed=0, clock=task.get("clock", "fixed")) as inst:
        for entry in task.get("reference") or []:
            ((tool, args),) = entry.items()
            if tool in SKIP:
                continue
            result = inst.call(tool, **args)
            step = {"call": tool, "args": args}
            if result.ok:
                step["result"] = compact(tool, result.value)
            else:
                step["error"] = result.error.model_dump(exclude_defaults=True)
            steps.append(step)
    return steps


def demo_for(task) -> dict:
    calls = run_reference(task)
    steps = [{"user": " ".join(task["user"]["message"].split())}]
    plan = REPLIES[task["id"]]
    if isinstance(plan, str):
        plan = [("calls", 99), ("reply", plan)]
    for kind, value in plan:
        if kind == "calls":
            steps += calls[:value]
            calls = calls[value:]
        else:
            steps.append({kind: value})
    return {"title": TITLES[task["id"]], "steps": steps}


FAKE_PEOPLE = [
    ("Sam", "Lee"),
    ("Alex", "Moreno"),
    ("Jamie", "Park"),
    ("Robin", "Hale"),
    ("Casey", "Nolan"),
    ("Drew", "Ivers"),
    ("Morgan", "Pike"),
    ("Taylor", "Quinn"),
    ("Jordan", "Vale"),
    ("Riley", "Stone"),
]
ID_SUBS = [
    (r"ORD-1(\d{3})", r"ORD-7\1"),
    (r"ITM-1(\d{3})", r"ITM-7\1"),
    (r"CUS-00(\d\d)", r"CUS-90\1"),
    (r"TKT-50(\d\d)", r"TKT-90\1"),
    (r"PRD-10(\d\d)", r"PRD-70\1"),
]


def anonymize(text: str, task, n: int) -> str:
    """Fictional ids, names and emails, consistent within the demo: retrieval then matches a request
    by what is asked (the words and the title), not by a customer or order it shares with a demo."""
    for pattern, repl in ID_SUBS:
        text = re.sub(pattern, repl, text)
    first, last = FAKE_PEOPLE[n % len(FAKE_PEOPLE)]
    for entry in task.get("reference") or []:
        ((tool, args),) = entry.items()
        if tool == "find_customer" and "email" in args:
            text = text.replace(args["email"], f"{first.lower()}.{last.lower()}@example.com")
    names = re.findall(r"name: ([A-Z][a-z]+) ([A-Z][\w']+)", text)
    for old_first, old_last in set(names):
        text = text.replace(f"{old_first} {old_last}", f"{first} {last}").replace(old_first, first)
    return text


def main(harness: str) -> None:
    out = Path(harness) / "demos"
    for n, task in enumerate(train_tasks()):
        name = "t_" + task["id"].replace("-", "_")
        text = yaml.safe_dump(demo_for(task), sort_keys=False, allow_unicode=True, width=200)
        (out / f"{name}.yaml").write_text(anonymize(text, task, n))
        print(name)


if __name__ == "__main__":
    main(sys.argv[1])
