"""Reply checks: facts the agent must tell the user, and things it must not say.

Phrases are matched case-insensitively, with runs of whitespace treated as one space, against
everything the agent said to the user over the conversation (not only its last message).
"""

from __future__ import annotations

import re

from ._matchers import show
from ._verdict import Check

_CONTEXT = 30  # characters shown either side of a forbidden phrase


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def check_replies(replies: list[str], contains: list[str], excludes: list[str]) -> list[Check]:
    said = _normal(" \n".join(replies))
    checks = []
    for phrase in contains:
        name = f"reply_contains {show(phrase)}"
        if _normal(phrase) in said:
            checks.append(
                Check(
                    name=name, passed=True, feedback=f"the agent said {show(phrase)}", kind="reply_contains"
                )
            )
            continue
        if not replies:
            happened = "it never replied"
        else:
            last = replies[-1].strip().replace("\n", " ")
            happened = (
                f"its replies never say it (last reply: {show(last[:80] + ('…' if len(last) > 80 else ''))})"
            )
        feedback = f"expected the agent to tell the user {show(phrase)}; {happened}"
        checks.append(Check(name=name, passed=False, feedback=feedback, kind="reply_contains"))
    for phrase in excludes:
        name = f"reply_excludes {show(phrase)}"
        at = said.find(_normal(phrase))
        if at < 0:
            feedback = f"the agent did not say {show(phrase)}"
            checks.append(Check(name=name, passed=True, feedback=feedback, kind="reply_excludes"))
            continue
        start, end = max(0, at - _CONTEXT), at + len(_normal(phrase)) + _CONTEXT
        snippet = ("…" if start else "") + said[start:end] + ("…" if end < len(said) else "")
        feedback = f"the agent said {show(phrase)}, which it must not: {show(snippet)}"
        checks.append(Check(name=name, passed=False, feedback=feedback, kind="reply_excludes"))
    return checks
