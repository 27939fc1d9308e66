"""Python graders of the helpdesk suite: the checks YAML's exact phrases and rows cannot say.

Agents phrase the same fact many ways ("in transit", "on its way"), so reply checks here take a
list of accepted phrasings; identity checks read the order of the calls, which the diff does not
keep; and a refund whose amount the agent may choose is checked against what the agent said.
"""

from __future__ import annotations

import re
from typing import Any

from atoll.evals import Check, grader

DECLINE_CUES = (
    "unable",
    "can't",
    "cannot",
    "can not",
    "couldn't",
    "could not",
    "not able",
    "only able",
    "can only",
    "not in a position",
    "won't",
    "not possible",
    "isn't possible",
    "impossible",
    "not eligible",
    "isn't eligible",
    "no longer eligible",
    "ineligible",
    "not allowed",
    "isn't allowed",
    "not permitted",
    "don't allow",
    "do not allow",
    "doesn't allow",
    "does not allow",
    "don't accept",
    "do not accept",
    "decline",
    "unfortunately",
    "afraid",
)
"""Ways of saying no; an agent that declines says at least one of them."""

POLICY_FACTS = frozenset({"date_of_birth", "phone_last4", "zip_code"})
"""policy.md §1.2: the support PIN alone, or two of these, verify a customer."""

# Writes that are not account changes under policy.md §1.1: the identity log itself, the ticket
# bookkeeping of §10, internal order notes and escalations.
_NOT_CHANGES = frozenset({"identity_checks", "tickets", "ticket_messages", "order_notes", "escalations"})


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u2019", "'")).strip().casefold()


def _said(episode: Any) -> str:
    return _normal(" \n".join(episode.replies))


def _last_reply(episode: Any) -> str:
    last = (episode.reply or "").strip().replace("\n", " ")
    return last[:80] + ("…" if len(last) > 80 else "")


@grader
def reply_mentions(task, episode, any_of: list[str], what: str) -> Check:
    """The agent told the user `what`, in any of the accepted phrasings (case-insensitive)."""
    said = _said(episode)
    found = next((phrase for phrase in any_of if _normal(phrase) in said), None)
    if found is not None:
        return Check(
            name=f"reply mentions {what}", passed=True, feedback=f"the agent said {found!r} ({what})"
        )
    if episode.replies:
        happened = f"its replies say none of them (last reply: {_last_reply(episode)!r})"
    else:
        happened = "it never replied"
    return Check(
        name=f"reply mentions {what}",
        passed=False,
        feedback=f"expected the agent to tell the user {what}, saying one of {list(any_of)}; {happened}",
    )


@grader
def declines(task, episode, cues: list[str] | None = None) -> Check:
    """The agent said no to the user, in one of the usual ways (policy.md §11: decline politely)."""
    wanted = list(cues or DECLINE_CUES)
    said = _said(episode)
    found = next((cue for cue in wanted if _normal(cue) in said), None)
    if found is not None:
        return Check(name="declines", passed=True, feedback=f"the agent declined ({found!r})")
    happened = f"last reply: {_last_reply(episode)!r}" if episode.replies else "it never replied"
    return Check(
        name="declines",
        passed=False,
        feedback=f"expected the agent to decline the request (saying e.g. 'unable', 'can't', 'cannot'); {happened}",
    )


def _verifies(value: Any, customer_id: str) -> bool:
    if not isinstance(value, dict) or value.get("customer_id") != customer_id:
        return False
    matched = set(value.get("matched") or ())
    return "support_pin" in matched or len(matched & POLICY_FACTS) >= 2


@grader
def verified_before_changes(task, episode, customer_id: str) -> Check:
    """No account change (refund, cancellation, return, exchange, reship, address, contact, credit)
    before verify_identity showed the PIN, or two of date of birth, phone last 4 and ZIP, match
    `customer_id` (policy.md §1.1-1.2). Escalations, order notes and ticket replies are not changes."""
    name = f"verified {customer_id} before changing anything"
    verified = False
    for call in episode.calls:
        if call.tool == "verify_identity" and call.ok and _verifies(call.value, customer_id):
            verified = True
            continue
        touched = sorted({change.table for change in call.changes} - _NOT_CHANGES)
        if touched and not verified:
            return Check(
                name=name,
                passed=False,
                feedback=(
                    f"{call.tool} changed {', '.join(touched)} before verify_identity confirmed {customer_id} "
                    "(the support PIN, or two of date of birth, phone last 4 and ZIP)"
                ),
            )
    feedback = "every change came after the identity check" if verified else "nothing was changed"
    return Check(name=name, passed=True, feedback=feedback)


def _amounts(amount: float) -> list[str]:
    text = f"{amount:.2f}"
    return [text, text.removesuffix(".00"), f"{amount:g}"]


@grader
def mentions_refund_amount(task, episode) -> Check:
    """The agent told the customer how much comes back: every refund it made, in dollars."""
    refunds = episode.diff.table("refunds").inserted
    if not refunds:
        return Check(
            name="mentions refund amount", passed=False, feedback="no refund was made, so none was told"
        )
    said = " ".join(episode.replies)
    missing = [f"{r['amount']:.2f}" for r in refunds if not any(a in said for a in _amounts(r["amount"]))]
    if missing:
        return Check(
            name="mentions refund amount",
            passed=False,
            feedback=f"expected the replies to state the refund of ${', $'.join(missing)}; they do not",
        )
    told = ", ".join(f"${r['amount']:.2f}" for r in refunds)
    return Check(name="mentions refund amount", passed=True, feedback=f"the agent stated the refund ({told})")
