"""Run a live OpenAI-compatible judge over a dataset and keep every answer in the answer store.

Protocols (the paper's, Gupta & Kumar 2026, sections 3-4 and appendix A; the prompts are ``judges``'s):

- ``task="direct"``: one 1-5 score per (item, criterion, repetition) via ``JudgeClient.score``.
- ``task="pairwise"``: within each document, every pair of its systems (``C(n, 2)`` pairs) per (criterion,
  repetition) via ``JudgeClient.prefer``; the pair is shown in canonical order ("ab": the system whose id sorts
  first is Summary A), and also in the swapped order ("ba") with ``both_orders=True``. Keys use
  ``offline.build.inputs.pairwise.pair_item_id``; ``outcome`` is relative to the order shown.
- ``task="factuality_direct"`` / ``"factuality_qa"``: one call of ``item_judge(client, document, summary)``
  per (item, repetition), by default ``judges.factuality.methods.judge_faithfulness_direct`` / ``_qa``. These
  prompts are the factuality module's own, so the answers are stored under ``prompt_family`` = the task name
  (``FAITHFULNESS_PROMPT_FAMILIES``, whatever family the judge is configured with) and criterion
  ``"faithfulness"``; on FRANK the ``item_id`` is ``"<hash>/<model_name>"`` (``offline.collecting.targets``). A QA
  verdict is stored with its 1-5 ``judge_score`` and its whole ``QAFactuality`` JSON (aggregate ``score``,
  ``exact_match``, evidence per question) as ``raw_reply``; a direct verdict with its score log-probs.
  ``"factuality_sentences"`` (``judges.factuality.sentence_check``): the raw JSON-list reply as ``raw_reply`` and
  ``judge_score`` = 1 + round_half_up(4 x share of sentences judged error-free), read back by
  ``offline.build.factuality.sentences.sentence_answers_from_store``.
- Any other protocol: pass ``run_one(key) -> AnswerRecord`` and the keys to :func:`run_keys`.

Guarantees: at most ``concurrency`` judge invocations at a time (retries are the client's); every answer is
written to the store as soon as it arrives, so an interrupted run loses nothing and a re-run skips every key
already answered (a second complete run makes 0 calls); a failed invocation is stored with its ``error`` text
and counted, and is retried by the next run (``retry_failed=True``).

What to ask (the FRANK sample, the paper's default SummEval subset, the answer keys): :mod:`offline.collecting.targets`.

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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import msgspec
from tqdm import tqdm

from judges.factuality.methods import FAITHFULNESS_PROMPT_FAMILIES, judge_faithfulness_direct, judge_faithfulness_qa
from judges.factuality.sentence_check import judge_faithfulness_sentences
from offline.build.answers.records import TASKS, AnswerKey, AnswerRecord
from offline.build.answers.store import AnswerStore
from offline.build.inputs.pairwise import presented
from offline.build.inputs.summeval import Article, SummEvalItem
from offline.collecting.targets import TargetItem, direct_keys, pairwise_keys, targets

__all__ = [
    "FACTUALITY_CRITERION",
    "FACTUALITY_TASKS",
    "CollectReport",
    "FailureNote",
    "collect",
    "run_keys",
    "verdict_record",
]

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
    task's ``judges.factuality.methods`` method) and store under prompt family = task, criterion faithfulness.

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
            raise ValueError(
                f"task {task!r} stores under prompt family {own!r} (the factuality module's prompts), "
                f"not {prompt_family!r}"
            )
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
