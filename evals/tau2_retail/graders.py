"""The τ² suites' one Python grader: τ²-bench's COMMUNICATE check, exactly.

τ² counts a fact as told when the string appears in one of the agent's messages, case ignored and
commas removed from the message (so "1,093.34" tells "1093.34"); Atoll's `reply_contains` neither
drops commas nor looks at messages one by one, so the suites use this instead.
"""

from atoll.evals import Check, grader


@grader
def communicates(task, episode, info: list[str]):
    """Each string of τ²'s `communicate_info` appears in one of the agent's messages to the user."""
    checks = []
    for text in info:
        said = next(
            (reply for reply in episode.replies if text.lower() in reply.lower().replace(",", "")), None
        )
        feedback = (
            f"said {text!r}"
            if said is not None
            else f"expected the agent to tell the user {text!r}; it did not"
        )
        checks.append(Check(name=f"communicates {text!r}", passed=said is not None, feedback=feedback))
    return checks
