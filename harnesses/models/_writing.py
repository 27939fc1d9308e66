"""Writing answers: every conversation that is writing advances in one llama.cpp batch a step, each
with prompt-lookup guesses.

Why batches: reading is compute-bound, but writing one token is not (it reads every weight for one
row of arithmetic), so sequences written together share that cost. `python benchmarks/engine.py`,
the 1.5B model on two cores: one sequence writes 11.7 tokens/s, two together 19.3, four 21.5.

Why guesses: an agent's answers copy what it read (ids, emails and amounts from tool results, the
`", "arguments": {"` of its earlier calls), so the tokens that followed the answer's last `NGRAM`
tokens earlier in its context are a good guess of what comes next. A greedy writer evaluates its
newest token and `DRAFT` guessed ones in the same batch and keeps the guesses as far as the model
agrees. A batch of four tokens costs about 2.5 single ones here, so a guess is made only where
the last `NGRAM` tokens occurred before; on five acting helpdesk episodes (1.5B model) writing went
from 12.6 to 14.9 tokens/s with 3 and 3 (13.5 with 2 and 2, 14.6 with 4 and 4).

A greedy answer is the text plain greedy decoding writes, but for rounding: a token evaluated in
a batch (beside its guesses, or beside another conversation's tokens) can differ in its last bits
from the same token evaluated alone, and where two candidates are that close the other may win.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

NGRAM = 3  # tokens that must match for a guess: fewer match too often to pay
DRAFT = 3  # tokens guessed at once


class Lookup:
    """Where each `NGRAM`-token run last occurred in a context, kept as tokens are added."""

    def __init__(self, tokens: Sequence[int]) -> None:
        self.tokens: list[int] = []
        self.last: dict[tuple[int, ...], int] = {}
        self.extend(tokens)

    def extend(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            self.tokens.append(token)
            if len(self.tokens) > NGRAM:
                # The run before the newest token, by where it ended: a guess continues from there.
                self.last[tuple(self.tokens[-NGRAM - 1 : -1])] = len(self.tokens) - 1

    def guess(self, limit: int) -> list[int]:
        """The tokens (at most `limit`) that followed the newest earlier run of the last `NGRAM`."""
        if limit <= 0 or len(self.tokens) < NGRAM:
            return []
        end = self.last.get(tuple(self.tokens[-NGRAM:]))
        return [] if end is None else self.tokens[end : end + limit]


class Writer:
    """One answer being written into sequence `seq` of the context, from `position` on.

    `chosen` is the next token of the answer, picked but not yet evaluated; `reason` is set once the
    answer has ended: "stop" (end of turn, a stop string, or `should_stop`) or "length"."""

    def __init__(
        self,
        *,
        seq: int,
        position: int,
        context: Sequence[int],
        first: np.ndarray,
        max_tokens: int,
        stops: Sequence[str],
        banned: Sequence[int],
        temperature: float,
        top_p: float | None,
        seed: int,
        is_end: Callable[[int], bool],
        should_stop: Callable[[list[int]], bool],
        detokenize: Callable[[list[int]], bytes],
    ) -> None:
        self.seq, self.position = seq, position
        self.max_tokens, self.stops = max_tokens, list(stops)
        self.banned = np.array(list(banned), dtype=np.int64)
        self.temperature, self.top_p = temperature, top_p
        self.rng = np.random.default_rng(seed)
        self.is_end, self.should_stop, self.detokenize = is_end, should_stop, detokenize
        self.lookup = Lookup(context) if temperature == 0 else None
        self.written: list[int] = []
        self.guessed: list[int] = []
        self.drafted = self.accepted = 0
        self.chosen = self._pick(first)
        self.reason: str | None = self._take(self.chosen)

    @property
    def text(self) -> str:
        """The answer so far, cut before the first stop string."""
        text = self.detokenize(self.written).decode("utf-8", errors="ignore")
        cut = min((i for i in (text.find(stop) for stop in self.stops) if i >= 0), default=len(text))
        return text[:cut]

    def pending(self) -> list[int]:
        """The tokens to evaluate this step: the chosen one, and guesses of those after it."""
        self.guessed = []
        if self.lookup is not None:
            self.lookup.extend([self.chosen])
            self.guessed = self.lookup.guess(min(DRAFT, self.max_tokens - len(self.written)))
            self.drafted += len(self.guessed)
        return [self.chosen, *self.guessed]

    def advance(self, rows: np.ndarray) -> None:
        """Take the logits after each pending token: keep the guesses the model agrees with, pick
        the next token; afterwards the sequence should hold nothing from `position` on."""
        self.position += 1
        following = self._pick(rows[0])
        for row, guessed in zip(rows[1:], self.guessed, strict=False):
            if guessed != following:
                break
            self.accepted += 1
            self.position += 1
            if (reason := self._take(following)) is not None:
                self.reason = reason
                return
            assert self.lookup is not None
            self.lookup.extend([following])
            following = self._pick(row)
        self.chosen = following
        self.reason = self._take(following)

    def _take(self, token: int) -> str | None:
        """Take `token` as written, or say why the answer ends before or with it."""
        if self.is_end(token):
            return "stop"
        self.written.append(token)
        text = self.detokenize(self.written).decode("utf-8", errors="ignore")
        if any(stop in text for stop in self.stops) or self.should_stop(self.written):
            return "stop"
        return "length" if len(self.written) >= self.max_tokens else None

    def _pick(self, row: np.ndarray) -> int:
        logits = np.array(row, dtype=np.float64)
        if self.banned.size:
            logits[self.banned] = -np.inf
        if self.temperature == 0:
            return int(np.argmax(logits))
        logits = (logits - logits.max()) / self.temperature
        order = np.argsort(-logits)
        probs = np.exp(logits[order])
        probs /= probs.sum()
        if self.top_p is not None and self.top_p < 1:
            keep = int(np.searchsorted(np.cumsum(probs), self.top_p)) + 1
            order, probs = order[:keep], probs[:keep] / probs[:keep].sum()
        return int(order[self.rng.choice(len(order), p=probs)])


def step(llama: Any, writers: Sequence[Writer]) -> None:
    """Evaluate every writer's pending tokens in one batch and advance each writer."""
    pending = [(writer, writer.pending()) for writer in writers]
    batch = llama._batch.batch
    count = 0
    for writer, tokens in pending:
        for offset, token in enumerate(tokens):
            batch.token[count] = token
            batch.pos[count] = writer.position + offset
            batch.seq_id[count][0] = writer.seq
            batch.n_seq_id[count] = 1
            batch.logits[count] = True
            count += 1
    batch.n_tokens = count
    llama._ctx.decode(llama._batch)
    n_vocab = llama.n_vocab()
    logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(count * n_vocab,)).reshape(count, n_vocab)
    start = 0
    for writer, tokens in pending:
        writer.advance(logits[start : start + len(tokens)])
        start += len(tokens)
        llama._ctx.kv_cache_seq_rm(writer.seq, writer.position, -1)  # guesses the model did not take
