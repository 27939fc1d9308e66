"""Python graders of the payments suite: what the customer must hear, in any of its accepted phrasings.

An agent says "$180", "180.00" or "one hundred eighty dollars" for the same fact, so a reply check takes a
list of phrasings and passes on any of them.
"""

from __future__ import annotations

import re
from typing import Any

from atoll.evals import Check, grader


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u2019", "'")).strip().casefold()


@grader
def reply_mentions(task, episode: Any, any_of: list[str], what: str) -> Check:
    """The agent told the customer `what`, in any of the accepted phrasings (case-insensitive)."""
    said = _normal(" \n".join(episode.replies))
    found = next((phrase for phrase in any_of if _normal(phrase) in said), None)
    if found is not None:
        return Check(
            name=f"reply mentions {what}", passed=True, feedback=f"the agent said {found!r} ({what})"
        )
    last = (episode.reply or "").strip().replace("\n", " ")[:80]
    return Check(
        name=f"reply mentions {what}",
        passed=False,
        feedback=f"the customer should hear {what} (any of {any_of}); the last reply says none of them: {last!r}",
    )
