"""Counting many messages at once: texts deduplicated, looked up in the persistent
cache, and the rest tokenized in batches, by the run's workers when there is enough.

The main process parses, hashes and gathers; workers only tokenize (texts go out,
counts come back). A message waits as a plan (sums over texts) until its texts are
counted, so memory is bounded by the batches in flight, not by the file.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from . import tokens
from .models import DEFAULT_MODEL, ModelTable
from .tokens import COUNT_VERSION, Key, MessageCount, MessagePlan, TokenCounter, cache_key, digest
from .transcript import Message

if TYPE_CHECKING:
    from .cache import Store
    from .workers import Workers

T = TypeVar("T")

BATCH_CHARS = 2 << 20  # new text gathered before a round of lookups and tokenizing
TASK_CHARS = 512 << 10  # text per task sent to a worker
TASKS_PER_WORKER = 3  # tasks queued ahead per worker, so none waits on the main process
MAX_PLANS = 20_000  # messages waiting before a round is forced
# Messages held back while waiting for the transcript to name its model.
MODEL_LOOKAHEAD = 256


def _tokenize(encoding: str, texts: list[str]) -> list[int]:
    enc = tokens.load_encoding(encoding)  # a forked worker has it already
    if enc is None:
        return [tokens.estimate(t) for t in texts]
    return [tokens.encode_count(enc, t) for t in texts]


class BulkCounter(Generic[T]):
    """Feed it plans with a payload; `deliver(payload, count)` is called as each adds up."""

    def __init__(self, counter: TokenCounter, deliver: Callable[[T, MessageCount], None], *,
                 persistent: bool = False, workers: Workers | None = None) -> None:
        self.counter = counter
        self.deliver = deliver
        self.workers = workers  # None: everything is counted in this process
        self.uncached_chars = 0
        self.store: Store | None = None
        if persistent:
            from .cache import open_store

            self.store = open_store(f"{counter.encoding_name}/v{COUNT_VERSION}")
        self._want: dict[Key, str] = {}
        self._want_chars = 0
        self._plans: deque[tuple[MessagePlan, T]] = deque()
        self._parallel = False  # tasks go to the workers
        self._flying: deque[tuple[Any, list[Key], list[str]]] = deque()
        self._flying_keys: set[Key] = set()

    def need(self, text: str) -> int | Key:
        """The count of `text` if known, else its key (and the text joins the next round)."""
        if not text:
            return 0
        key = cache_key(text)
        n = self.counter.known(key)
        if n is not None:
            self.counter.hits += 1
            return n
        if key in self._want or key in self._flying_keys:
            self.counter.hits += 1
        else:
            self.counter.misses += 1
            self._want[key] = text
            self._want_chars += len(text)
        return key

    def add(self, plan: MessagePlan, payload: T) -> None:
        """Deliver a message's count now if its texts are all known, else once they are."""
        if not self._plans:
            count = self.counter.resolve(plan)
            if count is not None:
                self.deliver(payload, count)
                return
        self._plans.append((plan, payload))
        if self._want_chars >= BATCH_CHARS or len(self._plans) > MAX_PLANS:
            self._round()
            self._collect(block=len(self._plans) > MAX_PLANS)
        elif self._flying and self._flying[0][0].done():
            self._collect(block=False)
        else:
            return  # nothing new counted, nothing to release
        self._release()

    def finish(self) -> None:
        """Count everything still waiting and deliver every plan."""
        self._round()
        self._collect(block=True)
        self._release()
        assert not self._plans, "a plan names a text that was never counted"
        if self.store is not None:
            self.store.close()

    def close(self) -> None:
        """Close the store (also after an error or Ctrl-C)."""
        if self.store is not None:
            self.store.close()

    @property
    def tally(self) -> dict[str, Any]:
        """What counting cost: texts found in memory or the store, tokenized, stored."""
        store = self.store
        return {"memory_hits": self.counter.hits, "stored_hits": store.found if store else 0,
                "tokenized": self.counter.tokenized, "stored_new": store.written if store else 0,
                "workers": self.workers.count if self._parallel else 0,
                "store": str(store.path) if store and store.path else None,
                "store_problem": store.problem if store else ""}

    def _round(self) -> None:
        """Look up the gathered texts in the store; tokenize the rest, here or in workers."""
        want, self._want, self._want_chars = self._want, {}, 0
        if self.store is not None and want:
            self._from_store(self.store, want)
        if not want:
            return
        self.uncached_chars += sum(map(len, want.values()))
        # (loading the encoding here first also hands it to forked workers ready-made)
        self._parallel = self._parallel or (
            self.workers is not None and not self.counter.estimated
            and self.workers.worth(self.uncached_chars))
        if not self._parallel:
            keys = list(want)
            self._absorb(keys, [self.counter.count_now(want[k]) for k in keys])
            return
        task: list[Key] = []
        size = 0
        for key, text in want.items():
            task.append(key)
            size += len(text)
            if size >= TASK_CHARS:
                self._submit(task, want)
                task, size = [], 0
        if task:
            self._submit(task, want)

    def _from_store(self, store: Store, want: dict[Key, str]) -> None:
        by_digest = {k if isinstance(k, bytes) else digest(k): k for k in want}
        for d, n in store.get(list(by_digest)).items():
            key = by_digest[d]
            self.counter.remember(key, n)
            del want[key]

    def _submit(self, keys: list[Key], want: dict[Key, str]) -> None:
        texts = [want[k] for k in keys]
        assert self.workers is not None
        while len(self._flying) >= TASKS_PER_WORKER * self.workers.count:
            self._land(*self._flying.popleft())
        future = self.workers.submit(_tokenize, self.counter.encoding_name, texts)
        if future is not None:
            self._flying.append((future, keys, texts))
            self._flying_keys.update(keys)
            return
        self._absorb(keys, [self.counter.count_now(t) for t in texts])

    def _collect(self, block: bool) -> None:
        """Take in finished tasks, oldest first; with `block`, wait for all of them."""
        while self._flying and (block or self._flying[0][0].done()):
            self._land(*self._flying.popleft())

    def _land(self, future: Any, keys: list[Key], texts: list[str]) -> None:
        try:
            counts = future.result()
        except Exception:  # a worker died (BrokenProcessPool) or failed: count these here
            counts = [self.counter.count_now(t) for t in texts]
            assert self.workers is not None
            self.workers.broke()
        else:
            self.counter.tokenized += len(counts)
        self._flying_keys.difference_update(keys)
        self._absorb(keys, counts)

    def _absorb(self, keys: list[Key], counts: list[int]) -> None:
        for key, n in zip(keys, counts, strict=True):
            self.counter.remember(key, n)
        if self.store is not None and self.counter.has_encoding:  # never store estimates
            self.store.put((k if isinstance(k, bytes) else digest(k), n)
                           for k, n in zip(keys, counts, strict=True))

    def _release(self) -> None:
        """Deliver, in order, the plans whose texts are all counted."""
        plans, resolve = self._plans, self.counter.resolve
        while plans:
            count = resolve(plans[0][0])
            if count is None:
                return
            plan, payload = plans.popleft()
            self.deliver(payload, count)


class StreamCounter(Generic[T]):
    """Counts messages as a transcript streams in, once the model (and so the encoding)
    is known: a conversation's messages wait until it names its model, up to
    MODEL_LOOKAHEAD. Each conversation is counted with the model it names (sessions of
    several models joined in one file); one that names none with the model before it, the
    first with the transcript's `usual` one; a `model` given is every conversation's.

    `named(n)` gives the model conversation n has named so far (besides its messages' own,
    a header's: Codex's `turn_context`), or None; `usual()` the model to assume where the
    first names none. `deliver(payload, count)` is called for each message, in order, as
    its count adds up.
    """

    def __init__(self, model: str | None, table: ModelTable,
                 named: Callable[[int], str | None], usual: Callable[[], str | None],
                 deliver: Callable[[T, MessageCount], None], *, cache: bool = False,
                 workers: Workers | None = None) -> None:
        self.table = table
        self.workers = workers
        self.named = named
        self.usual = usual
        self.deliver = deliver
        self.cache = cache
        self.counter: TokenCounter | None = None
        self.bulk: BulkCounter[T] | None = None
        self._waiting: list[tuple[Message, T]] = []
        self._given = bool(model)
        self._conversation = 0  # of the messages read last
        self._done: list[dict[str, Any]] = []  # the tallies of the counters before this one
        if model:
            self._start(model)

    def add(self, message: Message, payload: T) -> None:
        opens = message.conversation != self._conversation
        if opens:
            if self._waiting:  # the one before named no model among its messages
                self._decide(self._model_of(self._conversation))
            self._conversation = message.conversation
        # a conversation's messages wait until it names its model
        if self.bulk is None or self._waiting or (opens and not self._given):
            self._waiting.append((message, payload))
            named = self.table.choose([message.model, self.named(message.conversation)])
            if named or len(self._waiting) >= MODEL_LOOKAHEAD:
                self._decide(named or self._model_of(message.conversation))
            return
        self._count(message, payload)

    def done(self) -> TokenCounter:
        """Finish counting: every payload has had its count after this."""
        if self.bulk is None or self._waiting:
            self._decide(self._model_of(self._conversation))
        assert self.bulk is not None and self.counter is not None
        self.bulk.finish()
        return self.counter

    def close(self) -> None:
        if self.bulk is not None:
            self.bulk.close()

    @property
    def tally(self) -> dict[str, Any]:
        if self.bulk is None:
            return {}
        added = ("memory_hits", "stored_hits", "tokenized", "stored_new")
        now = self.bulk.tally
        return {k: v + sum(t[k] for t in self._done) if k in added else v
                for k, v in now.items()}

    def _model_of(self, conversation: int) -> str | None:
        """The model conversation `conversation` is counted with where its messages name
        none: the one it names, else (the first counted) the usual one; None: the one before
        it stands."""
        return self.table.choose([self.named(conversation),
                                  *([self.usual()] if self.bulk is None else [])])

    def _decide(self, named: str | None) -> None:
        """Count the waiting messages with the model `named` (None: the counter's, or the
        default where there is none yet)."""
        if self.bulk is None:
            self._start(named)
        elif named is not None and self.counter is not None and named != self.counter.model:
            self.bulk.finish()  # (every message before is counted with its own model)
            self._done.append(self.bulk.tally)
            self._start(named)
        else:
            waiting, self._waiting = self._waiting, []
            for message, payload in waiting:
                self._count(message, payload)

    def _start(self, model: str | None) -> None:
        self.counter = TokenCounter(model or DEFAULT_MODEL, self.table)
        self.bulk = BulkCounter(self.counter, self.deliver, persistent=self.cache,
                                workers=self.workers)
        waiting, self._waiting = self._waiting, []
        for message, payload in waiting:
            self._count(message, payload)

    def _count(self, message: Message, payload: T) -> None:
        assert self.bulk is not None and self.counter is not None
        self.bulk.add(self.counter.plan(message, self.bulk.need), payload)
