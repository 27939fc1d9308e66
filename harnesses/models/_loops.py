"""When a local model has fallen into a loop: the same span of tokens written again and again.

A small model that starts repeating one sentence rarely stops before `max_tokens` or the end of its
context: gemma's replies loop until its 120 tokens are spent, and the 1.5B model, asked to rewrite a
harness, wrote one sentence of its rationale 50 times (3,211 tokens, seven minutes on two cores).
Nothing after the third copy can change what the answer says, so generation ends there; the
protocols read what came before the loop (see `harnesses/_protocols.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

COPIES = 3  # a span written this many times back to back is a loop
SHORTEST = 8  # tokens: shorter repeats are digits, separators or a list's punctuation, not a loop
LONGEST = 160  # tokens: about two long sentences


def in_a_loop(tokens: Sequence[int]) -> bool:
    """Whether `tokens` (an answer so far) end in one span of SHORTEST to LONGEST tokens written COPIES
    times back to back. Cheap enough to ask after every token: a span is compared only when the last
    token matches the one a span earlier."""
    n = len(tokens)
    for span in range(SHORTEST, min(LONGEST, n // COPIES) + 1):
        if tokens[n - 1] != tokens[n - 1 - span]:
            continue
        last = list(tokens[n - span : n])
        if all(list(tokens[n - (k + 1) * span : n - k * span]) == last for k in range(1, COPIES)):
            return True
    return False
