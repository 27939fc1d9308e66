"""Python graders of the clinic suite: the checks YAML's exact phrases and rows cannot say.

Agents phrase the same fact many ways ("2 pm", "14:00"), so reply checks take a list of accepted
phrasings; the identity check reads the order of the calls, which the diff does not keep.
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
    "not able",
    "only able",
    "can only",
    "won't",
    "not possible",
    "isn't possible",
    "not allowed",
    "not permitted",
    "decline",
    "unfortunately",
    "afraid",
)
"""Ways of saying no; an agent that declines says at least one of them."""

# Writes that are not changes under policy.md §1.1: the identity log itself and notes on the record.
_NOT_CHANGES = frozenset({"identity_checks", "notes"})


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u2019", "'")).strip().casefold()


def _said(episode: Any) -> str:
    return _normal(" \n".join(episode.replies))


def _last_reply(episode: Any) -> str:
    last = (episode.reply or "").strip().replace("\n", " ")
    return last[:80] + ("…" if len(last) > 80 else "")


@grader
def reply_mentions(task, episode, any_of: list[str], what: str) -> Check:
    """The agent told the client `what`, in any of the accepted phrasings (case-insensitive)."""
    said = _said(episode)
    found = next((phrase for phrase in any_of if _normal(phrase) in said), None)
    if found is not None:
        return Check(
            name=f"reply mentions {what}", passed=True, feedback=f"the agent said {found!r} ({what})"
        )
    happened = (
        f"its replies say none of them (last reply: {_last_reply(episode)!r})"
        if episode.replies
        else "it never replied"
    )
    return Check(
        name=f"reply mentions {what}",
        passed=False,
        feedback=f"expected the agent to tell the client {what}, saying one of {list(any_of)}; {happened}",
    )


@grader
def declines(task, episode) -> Check:
    """The agent said no to the client, in one of the usual ways (policy.md §7)."""
    said = _said(episode)
    found = next((cue for cue in DECLINE_CUES if _normal(cue) in said), None)
    if found is not None:
        return Check(name="declines", passed=True, feedback=f"the agent declined ({found!r})")
    happened = f"last reply: {_last_reply(episode)!r}" if episode.replies else "it never replied"
    return Check(
        name="declines",
        passed=False,
        feedback=f"expected the agent to decline the request (saying e.g. 'unable', 'can't', 'cannot'); {happened}",
    )


@grader
def verified_before_changes(task, episode, client_id: str) -> Check:
    """No booking, cancellation, move, waiver or refund before verify_client said `verified` for
    `client_id` (policy.md §1.1-1.2). Identity checks and notes are not changes."""
    name = f"verified {client_id} before changing anything"
    verified = False
    for call in episode.calls:
        value = call.value if isinstance(call.value, dict) else {}
        if (
            call.tool == "verify_client"
            and call.ok
            and value.get("client_id") == client_id
            and value.get("verified")
        ):
            verified = True
            continue
        touched = sorted({change.table for change in call.changes} - _NOT_CHANGES)
        if touched and not verified:
            return Check(
                name=name,
                passed=False,
                feedback=(
                    f"{call.tool} changed {', '.join(touched)} before verify_client confirmed {client_id} "
                    "(the phone number and the ZIP code, both matching)"
                ),
            )
    feedback = "every change came after the identity check" if verified else "nothing was changed"
    return Check(name=name, passed=True, feedback=feedback)
