"""Python graders of the minidesk test suite."""

from atoll.evals import Check, grader


@grader
def mentions_amount(fixture, diff, transcript):
    """The agent tells the customer how much comes back."""
    refunds = diff.table("refunds").inserted
    if not refunds:
        return Check(name="mentions amount", passed=False, feedback="no refund, so no amount to mention")
    amount = f"{refunds[0]['amount']:.2f}"
    said = " ".join(e.content or "" for e in transcript if e.kind == "assistant")
    return Check(
        name="mentions amount",
        passed=amount in said,
        feedback=f"expected the reply to mention {amount}; "
        + ("it does" if amount in said else "it does not"),
    )


@grader
def reply_shorter_than(task, episode, words: int = 50):
    """Customers skim: the last reply stays short."""
    count = len((episode.reply or "").split())
    return Check(
        name=f"reply under {words} words",
        passed=count < words,
        feedback=f"expected under {words} words; the last reply has {count}",
        weight=0.5,
    )
