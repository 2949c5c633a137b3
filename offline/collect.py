"""Run a live OpenAI-compatible judge over a dataset and keep every answer in the answer store.

Protocols (the paper's, Gupta & Kumar 2026, sections 3-4 and appendix A; the prompts are ``judges``'s):

- ``task="direct"``: one 1-5 score per (item, criterion, repetition) via ``JudgeClient.score``.
- ``task="pairwise"``: within each document, every pair of its systems (``C(n, 2)`` pairs) per (criterion,
  repetition) via ``JudgeClient.prefer``; the pair is shown in canonical order ("ab": the system whose id sorts
  first is Summary A), and also in the swapped order ("ba") with ``both_orders=True``. Keys use
  ``offline.data.pairwise.pair_item_id``; ``outcome`` is relative to the order shown.
- ``task="factuality_direct"`` / ``"factuality_qa"``: one call of ``item_judge(client, document, summary)``
  per (item, repetition), by default ``judges.factuality.judge_faithfulness_direct`` / ``_qa``. These
  prompts are the factuality module's own, so the answers are stored under ``prompt_family`` = the task name
  (``FAITHFULNESS_PROMPT_FAMILIES``, whatever family the judge is configured with) and criterion
  ``"faithfulness"``; on FRANK the ``item_id`` is ``"<hash>/<model_name>"`` (:func:`frank_targets`). A QA
  verdict is stored with its 1-5 ``judge_score`` and its whole ``QAFactuality`` JSON (aggregate ``score``,
  ``exact_match``, evidence per question) as ``raw_reply``; a direct verdict with its score log-probs.
  ``"factuality_sentences"`` (``judges.sentence_check``): the raw JSON-list reply as ``raw_reply`` and
  ``judge_score`` = 1 + round_half_up(4 x share of sentences judged error-free), read back by
  ``offline.studies.factuality_sentences.sentence_answers_from_store``.
- Any other protocol: pass ``run_one(key) -> AnswerRecord`` and the keys to :func:`run_keys`.

Guarantees: at most ``concurrency`` judge invocations at a time (retries are the client's); every answer is
written to the store as soon as it arrives, so an interrupted run loses nothing and a re-run skips every key
already answered (a second complete run makes 0 calls); a failed invocation is stored with its ``error`` text
and counted, and is retried by the next run (``retry_failed=True``).

FRANK sample (:func:`frank_targets`): the items of the chosen split (``valid``, ``test`` or ``all``) in file
order; with ``limit=N`` the first N of ``numpy.random.default_rng(seed).permutation`` over them, put back in
file order. A larger ``limit`` with the same seed extends a smaller one, so the store's resume reuses every
answer already collected.

Default subset (:func:`default_subset`): the paper's "30 documents x 8 systems (systems 0, 2, 4, 6, 9, 11, 13,
15)". Reading chosen: the *positions* 0, 2, 4, 6, 9, 11, 13, 15 in SummEval's own per-document system order (the
order of ``items.jsonl``, the same for every document: M11, M13, M1, M14, M15, M12, M5, M17, M20, M23, M2, M0,
M22, M8, M10, M9), i.e. systems :data:`PAPER_SYSTEMS` = M11, M1, M15, M5, M23, M0, M8, M9, in the first 30
documents in file order. (Reading them as ids "M0, M2, M4, ..." is impossible: SummEval has no M4 or M6.)
The paper's call counts fit this subset with 1 repetition for direct scoring (4 judges x 960 = 3,840) and
k = 3 repetitions in one order for pairwise (4 x 28 pairs x 30 x 4 x 3 = 40,320).

==========================================================================  =================================
call                                                                        result
==========================================================================  =================================
``await collect(store, client, task="direct", items=default_subset(se),``   ``CollectReport``
``              articles=se.articles, criteria=CRITERIA, repetitions=1)``
``await collect(store, client, task="pairwise", items=..., articles=...,``  ``CollectReport``
``              criteria=CRITERIA, repetitions=3, both_orders=True)``
``await collect(store, client, task="factuality_qa", items=frank_targets(``  ``CollectReport``
``              frank, split="valid", limit=60), criteria=["faithfulness"])``
``await run_keys(store, keys, run_one, concurrency=8)``                     ``CollectReport`` (any protocol)
==========================================================================  =================================
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any, cast

import msgspec
import numpy as np
from tqdm import tqdm

from judges.factuality import FAITHFULNESS_PROMPT_FAMILIES, judge_faithfulness_direct, judge_faithfulness_qa
from judges.sentence_check import judge_faithfulness_sentences
from offline.data.frank import FRANK_SPLITS, Frank
from offline.data.pairwise import pair_item_id, presented
from offline.data.summeval import Article, SummEval, SummEvalItem
from offline.store import TASKS, AnswerKey, AnswerRecord, AnswerStore, Order, Task

__all__ = [
    "FACTUALITY_CRITERION",
    "FACTUALITY_TASKS",
    "PAPER_N_DOCUMENTS",
    "PAPER_REPETITIONS",
    "PAPER_SYSTEMS",
    "PAPER_SYSTEM_POSITIONS",
    "CollectReport",
    "FailureNote",
    "TargetItem",
    "collect",
    "default_subset",
    "direct_keys",
    "frank_targets",
    "pairwise_keys",
    "run_keys",
    "targets",
    "verdict_record",
]

PAPER_N_DOCUMENTS = 30
PAPER_SYSTEM_POSITIONS: tuple[int, ...] = (0, 2, 4, 6, 9, 11, 13, 15)
PAPER_SYSTEMS: tuple[str, ...] = ("M11", "M1", "M15", "M5", "M23", "M0", "M8", "M9")
PAPER_REPETITIONS: dict[str, int] = {"direct": 1, "pairwise": 3}
MAX_FAILURE_NOTES = 20
# Probabilities of exactly 0 have no logarithm; store them at the floor the recorded data uses (ln 1e-5).
LOGPROB_FLOOR = math.log(1e-5)

# Collection task -> the prompt family its answers are stored under (the task name, by the one-name rule).
FACTUALITY_TASKS: dict[str, str] = {f"factuality_{m}": family for m, family in FAITHFULNESS_PROMPT_FAMILIES.items()}
FACTUALITY_CRITERION = "faithfulness"

RunOne = Callable[[AnswerKey], Awaitable[AnswerRecord]]
ItemJudge = Callable[[Any, str, str], Awaitable[Any]]
_FACTUALITY_JUDGES: dict[str, ItemJudge] = {
    "factuality_direct": judge_faithfulness_direct,
    "factuality_qa": judge_faithfulness_qa,
    "factuality_sentences": judge_faithfulness_sentences,
}


class TargetItem(msgspec.Struct, frozen=True, kw_only=True):
    """One thing to judge: a summary of a document (``item_id`` is unique; ``system_id`` names its producer)."""

    item_id: str
    doc_id: str
    system_id: str
    document: str
    summary: str


class FailureNote(msgspec.Struct, frozen=True, kw_only=True):
    """A failed invocation: its key and the error text (also stored in the answer store)."""

    key: AnswerKey
    error: str


class CollectReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a collection run did.

    ``planned`` keys = ``skipped`` (already answered) + ``calls`` (invocations made) ; ``calls`` = ``succeeded``
    + ``failed``; ``no_verdict`` counts succeeded answers whose reply gave no score/outcome; tokens are summed
    over succeeded calls; ``failures`` holds up to 20 examples.
    """

    judge: str
    prompt_family: str
    task: str
    planned: int
    skipped: int
    calls: int
    succeeded: int
    failed: int
    no_verdict: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    failures: tuple[FailureNote, ...] = ()


def default_subset(
    summeval: SummEval,
    *,
    n_documents: int = PAPER_N_DOCUMENTS,
    positions: Sequence[int] = PAPER_SYSTEM_POSITIONS,
) -> list[SummEvalItem]:
    """The paper's subset: the first ``n_documents`` documents in file order and, in each, the items at
    ``positions`` of that document's block of items in file order (module docstring: M11, M1, M15, M5, M23, M0,
    M8, M9). Items come document by document, in position order.

    Raises:
        ValueError: fewer documents than asked, or a document with too few items for a position.
    """
    blocks: dict[str, list[SummEvalItem]] = {}
    for item in summeval.items:
        blocks.setdefault(item.doc_id, []).append(item)
    doc_ids = list(blocks)[:n_documents]
    if len(doc_ids) < n_documents:
        raise ValueError(f"asked for {n_documents} documents, the data has {len(doc_ids)}")
    subset: list[SummEvalItem] = []
    for doc_id in doc_ids:
        block = blocks[doc_id]
        if max(positions) >= len(block):
            raise ValueError(f"document {doc_id!r} has {len(block)} items, position {max(positions)} asked")
        subset.extend(block[p] for p in positions)
    return subset


def frank_targets(frank: Frank, *, split: str = "all", limit: int | None = None, seed: int = 0) -> list[TargetItem]:
    """FRANK items of ``split`` (``valid``/``test``/``all``) as TargetItems with their articles, file order;
    ``limit`` N keeps the first N of ``default_rng(seed).permutation`` over them (module docstring).

    ``item_id`` = ``"<hash>/<model_name>"``, ``doc_id`` = hash, ``system_id`` = model_name.

    Raises:
        ValueError: an unknown split, or a limit below 1.
    """
    if split not in (*FRANK_SPLITS, "all"):
        raise ValueError(f"split must be one of {(*FRANK_SPLITS, 'all')}, got {split!r}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    chosen = [item for item in frank.items if split == "all" or item.split == split]
    if limit is not None and limit < len(chosen):
        keep = np.sort(np.random.default_rng(seed).permutation(len(chosen))[:limit])
        chosen = [chosen[int(i)] for i in keep]
    return [
        TargetItem(item_id=item.item_id, doc_id=item.hash, system_id=item.model_name,
                   document=frank.articles[item.hash].article, summary=item.summary)
        for item in chosen
    ]


def targets(
    items: Iterable[SummEvalItem | TargetItem], articles: Mapping[str, Article | str] | None = None
) -> list[TargetItem]:
    """Turn SummEval items (with their ``articles``, by doc_id) into TargetItems; TargetItems pass through.

    Raises:
        ValueError: a SummEval item whose document is not in ``articles`` (or no ``articles`` given).
    """
    result = []
    for item in items:
        if isinstance(item, TargetItem):
            result.append(item)
            continue
        article = None if articles is None else articles.get(item.doc_id)
        if article is None:
            raise ValueError(f"no article for document {item.doc_id!r}: pass articles=summeval.articles")
        text = article if isinstance(article, str) else article.article
        result.append(
            TargetItem(
                item_id=item.item_id, doc_id=item.doc_id, system_id=item.system_id, document=text, summary=item.summary
            )
        )
    return result


def direct_keys(
    judge: str, prompt_family: str, task: str, items: Sequence[TargetItem], criteria: Sequence[str], repetitions: int
) -> list[AnswerKey]:
    """One key per (item, criterion, repetition), item-major, for a one-item task."""
    return [
        AnswerKey(
            judge=judge,
            prompt_family=prompt_family,
            task=cast(Task, task),
            criterion=criterion,
            item_id=item.item_id,
            repetition=rep,
        )
        for item in items
        for criterion in criteria
        for rep in range(repetitions)
    ]


def pairwise_keys(
    judge: str,
    prompt_family: str,
    items: Sequence[TargetItem],
    criteria: Sequence[str],
    repetitions: int,
    *,
    both_orders: bool,
) -> list[AnswerKey]:
    """Keys for every pair of systems within each document x criterion x repetition x order(s).

    Raises:
        ValueError: two items of one document share a system id.
    """
    by_doc: dict[str, list[str]] = {}
    for item in items:
        systems = by_doc.setdefault(item.doc_id, [])
        if item.system_id in systems:
            raise ValueError(f"document {item.doc_id!r} lists system {item.system_id!r} twice")
        systems.append(item.system_id)
    orders = ("ab", "ba") if both_orders else ("ab",)
    return [
        AnswerKey(
            judge=judge,
            prompt_family=prompt_family,
            task="pairwise",
            criterion=criterion,
            item_id=pair_item_id(doc_id, x, y),
            repetition=rep,
            order=cast(Order, order),
        )
        for doc_id, systems in by_doc.items()
        for x, y in combinations(sorted(systems), 2)
        for criterion in criteria
        for rep in range(repetitions)
        for order in orders
    ]


def _logprobs_of(verdict: Any) -> dict[str, float] | None:
    logprobs = getattr(verdict, "logprobs", None)
    if isinstance(logprobs, Mapping):
        # A label whose token was outside the returned top-k has no log-prob: its key is left out.
        kept = {str(k): float(v) for k, v in logprobs.items() if v is not None}
        return kept or None
    probabilities = getattr(verdict, "probabilities", None)
    if probabilities is None:
        return None
    return {str(i): (math.log(p) if p > 0 else LOGPROB_FLOOR) for i, p in enumerate(probabilities, start=1)}


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def verdict_record(key: AnswerKey, verdict: Any, *, model: str | None) -> AnswerRecord:
    """Store record of a client verdict: DirectVerdict, PreferenceVerdict, or any object with ``judge_score``
    (e.g. QAFactuality, whose full JSON becomes ``raw_reply`` when it has no ``raw_reply`` of its own)."""
    raw = getattr(verdict, "raw_reply", None)
    if raw is None and isinstance(verdict, msgspec.Struct):
        raw = msgspec.json.encode(verdict).decode()
    outcome = getattr(verdict, "outcome", None) if key.task == "pairwise" else None
    score = None if key.task == "pairwise" else _int_or_none(getattr(verdict, "judge_score", None))
    rule = getattr(verdict, "rule", None) or getattr(verdict, "parse_rule", None)
    if rule is None:
        rule = "client" if (score is not None or outcome is not None) else "no_verdict"
    return AnswerRecord.for_key(
        key,
        judge_score=score,
        outcome=outcome,
        logprobs=None if key.task == "pairwise" else _logprobs_of(verdict),
        raw_reply=raw,
        parse_rule=rule,
        model=model,
        prompt_tokens=_int_or_none(getattr(verdict, "prompt_tokens", None)),
        completion_tokens=_int_or_none(getattr(verdict, "completion_tokens", None)),
    )


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


async def run_keys(
    store: AnswerStore,
    keys: Sequence[AnswerKey],
    run_one: RunOne,
    *,
    concurrency: int = 8,
    progress: bool = True,
    retry_failed: bool = True,
    model: str | None = None,
    description: str = "collect",
) -> CollectReport:
    """Run ``run_one`` on every key not yet answered in ``store`` (at most ``concurrency`` at once), storing each
    result as it arrives; an exception becomes a stored failure (``error`` text) and is counted.

    Keys with a stored answer are skipped; stored failures are retried when ``retry_failed`` (else skipped).
    A ``run_one`` result whose key differs from the requested key counts as a failure.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    started = time.perf_counter()
    unique = list(dict.fromkeys(keys))
    done: set[AnswerKey] = set()
    for judge, task in {(k.judge, k.task) for k in unique}:
        done |= store.keys(judge=judge, task=task, ok_only=retry_failed)
    todo = [key for key in unique if key not in done]
    tally = {"succeeded": 0, "failed": 0, "no_verdict": 0, "prompt_tokens": 0, "completion_tokens": 0}
    failures: list[FailureNote] = []
    pending = iter(todo)
    bar = tqdm(total=len(todo), desc=description, unit="call", disable=not progress, leave=False)

    async def handle(key: AnswerKey) -> None:
        try:
            record = await run_one(key)
            if record.key != key:
                raise ValueError(f"run_one returned an answer for {record.key}, not for {key}")
        except Exception as exc:  # noqa: BLE001 - every failure is recorded and counted, never lost
            error = _error_text(exc)
            store.put(AnswerRecord.for_key(key, error=error, raw_reply=getattr(exc, "raw_reply", None), model=model))
            tally["failed"] += 1
            if len(failures) < MAX_FAILURE_NOTES:
                failures.append(FailureNote(key=key, error=error))
        else:
            store.put(record)
            tally["succeeded"] += 1
            tally["no_verdict"] += record.judge_score is None and record.outcome is None
            tally["prompt_tokens"] += record.prompt_tokens or 0
            tally["completion_tokens"] += record.completion_tokens or 0
        bar.update(1)

    async def worker() -> None:
        # The shared iterator hands each key to exactly one worker (no await between next() calls).
        for key in pending:
            await handle(key)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(concurrency, len(todo))):
                group.create_task(worker())
    except* Exception as group_error:
        # Only the store can fail here (judge failures are caught above): re-raise its own error, unwrapped.
        raise group_error.exceptions[0] from None
    finally:
        bar.close()
    first = unique[0] if unique else None
    return CollectReport(
        judge=first.judge if first else "",
        prompt_family=first.prompt_family if first else "",
        task=first.task if first else "",
        planned=len(unique),
        skipped=len(unique) - len(todo),
        calls=tally["succeeded"] + tally["failed"],
        succeeded=tally["succeeded"],
        failed=tally["failed"],
        no_verdict=tally["no_verdict"],
        prompt_tokens=tally["prompt_tokens"],
        completion_tokens=tally["completion_tokens"],
        seconds=time.perf_counter() - started,
        failures=tuple(failures),
    )


def _judge_identity(
    judge_client: Any, judge: str | None, prompt_family: str | None, model: str | None
) -> tuple[str, str, str | None]:
    config = getattr(judge_client, "config", None)
    name = judge or getattr(config, "name", None)
    family = prompt_family or getattr(config, "prompt_family", None)
    if not name or not family:
        raise ValueError(
            "the judge's name and prompt_family are needed: pass judge=/prompt_family= or a client with .config"
        )
    return name, family, model or getattr(config, "model", None)


async def collect(
    store: AnswerStore,
    judge_client: Any,
    *,
    task: str,
    items: Sequence[SummEvalItem | TargetItem],
    criteria: Sequence[str],
    repetitions: int = 3,
    both_orders: bool = False,
    concurrency: int = 8,
    progress: bool = True,
    articles: Mapping[str, Article | str] | None = None,
    item_judge: ItemJudge | None = None,
    judge: str | None = None,
    prompt_family: str | None = None,
    model: str | None = None,
    retry_failed: bool = True,
) -> CollectReport:
    """Collect a live judge's answers for ``task`` over ``items`` x ``criteria`` x ``repetitions`` (module rules).

    ``judge_client`` is a ``judges.client.JudgeClient`` (its ``config`` gives judge name, prompt family
    and model unless ``judge``/``prompt_family``/``model`` are passed). SummEval items need ``articles``
    (``summeval.articles``). Factuality tasks call ``item_judge(client, document, summary)`` (default: the
    task's ``judges.factuality`` method) and store under prompt family = task, criterion faithfulness.

    Raises:
        ValueError: unknown task, repetitions < 1, a missing article, an unnamed judge, or a factuality task
            asked for another prompt family or criterion than its own. Judge-call failures are not raised:
            they are stored and counted.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions}")
    if task in FACTUALITY_TASKS:
        own = FACTUALITY_TASKS[task]
        if prompt_family not in (None, own):
            raise ValueError(f"task {task!r} stores under prompt family {own!r} (the factuality module's prompts), "
                             f"not {prompt_family!r}")
        if list(criteria) != [FACTUALITY_CRITERION]:
            raise ValueError(f"task {task!r} judges criterion {FACTUALITY_CRITERION!r} only, got {list(criteria)}")
        prompt_family = own
        item_judge = item_judge or _FACTUALITY_JUDGES[task]
    name, family, model_name = _judge_identity(judge_client, judge, prompt_family, model)
    todo = targets(items, articles)
    by_id = {item.item_id: item for item in todo}
    by_system = {(item.doc_id, item.system_id): item for item in todo}

    if task == "pairwise":
        keys = pairwise_keys(name, family, todo, criteria, repetitions, both_orders=both_orders)

        async def run_one(key: AnswerKey) -> AnswerRecord:
            doc_id, first, second = presented(key.item_id, key.order)
            shown_first, shown_second = by_system[(doc_id, first)], by_system[(doc_id, second)]
            verdict = await judge_client.prefer(
                key.criterion, shown_first.document, shown_first.summary, shown_second.summary
            )
            return verdict_record(key, verdict, model=model_name)
    else:
        keys = direct_keys(name, family, task, todo, criteria, repetitions)

        async def run_one(key: AnswerKey) -> AnswerRecord:
            item = by_id[key.item_id]
            if item_judge is not None:
                verdict = await item_judge(judge_client, item.document, item.summary)
            else:
                verdict = await judge_client.score(key.criterion, item.document, item.summary)
            return verdict_record(key, verdict, model=model_name)

    report = await run_keys(
        store,
        keys,
        run_one,
        concurrency=concurrency,
        progress=progress,
        retry_failed=retry_failed,
        model=model_name,
        description=f"{name} {task}",
    )
    # Named even when there was nothing to do (run_keys names a report after its first key).
    return msgspec.structs.replace(report, judge=name, prompt_family=family, task=task)
