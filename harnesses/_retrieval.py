"""Retrieved demos: which of an agent's pool demos an episode shows, by BM25 against the request.

A small model copies the worked example closest to the end of its prompt, so showing the
examples most like the request at hand (the most similar last) moves it more than any fixed
set. The index is built once per harness and agent and kept in `harness.memo`. The runtime shows
them after the agent's prompt, as a message of their own, so the prompt itself stays the same for
every task and a local model reads it once per batch (see `harnesses/_runtime.py`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ._format import Demo
from ._harness import Harness

_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lowercase words; `track_shipment` is `track shipment`, so tool names meet the user's words."""
    return _WORD.findall(text.lower())


def demo_words(demo: Demo) -> list[str]:
    """A demo as a document: its title, its user turns and the names of the tools it calls."""
    parts = [demo.title]
    parts += [step.user for step in demo.steps if step.user is not None]
    parts += [step.call for step in demo.steps if step.call is not None]
    return words(" ".join(parts))


class DemoIndex:
    """BM25 over a set of demos; `closest` is deterministic (ties go to the earlier name)."""

    def __init__(self, demos: Mapping[str, Demo]) -> None:
        import bm25s  # numpy-backed: only harnesses that retrieve pay for the import

        self.names = list(demos)
        documents = [demo_words(demos[name]) for name in self.names]
        self._bm25: bm25s.BM25 | None = None
        if any(documents):  # bm25s cannot index a corpus without a single word
            self._bm25 = bm25s.BM25()
            self._bm25.index(documents, show_progress=False)

    def closest(self, query: str, k: int) -> list[str]:
        """The k names most similar to `query`, least similar first and the most similar last."""
        terms = words(query)
        scores = [0.0] * len(self.names)
        if self._bm25 is not None and terms:  # nor score a query without one
            scores = self._bm25.get_scores(terms).tolist()
        ranked = sorted(zip(self.names, scores, strict=True), key=lambda item: (-item[1], item[0]))
        return [name for name, _ in ranked[:k]][::-1]


def retrieved_demos(harness: Harness, agent: str, opening: str) -> list[str]:
    """The pool demos an agent shows for a run opened by `opening`, after its fixed `demos`."""
    config = harness.agent(agent)
    if config.retrieve_demos == 0:
        return []
    key = ("demo_index", agent)
    index = harness.memo.get(key)
    if index is None:
        fixed = set(config.demos)
        pool = {name: harness.demos[name] for name in config.demo_pool if name not in fixed}
        index = harness.memo[key] = DemoIndex(pool)
    return index.closest(opening, config.retrieve_demos)
