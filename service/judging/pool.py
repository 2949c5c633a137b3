"""Live judge calls for the service: one client per configured judge, answers cached, identical calls merged.

======================================================== ===============================================
call                                                     result
======================================================== ===============================================
``pool = JudgePool(settings, metrics, logger, tracing)``  empty; ``await pool.start()`` in the lifespan
``await pool.start()``                                   reads JUDGES_FILE, opens clients and the cache
``pool.names()``                                         configured judges in JUDGES_FILE order
``await pool.direct(judge, criterion, doc, summary)``    ``Cached(value=DirectVerdict, cached, calls, ...)``
``await pool.faithfulness_direct(judge, doc, summary)``  ``Cached(DirectVerdict)``
``await pool.faithfulness_qa(judge, doc, summary, n)``   ``Cached(QAFactuality)``
``await pool.faithfulness_sentences(judge, doc, summ)``  ``Cached(SentenceFactuality)``
``await pool.prefer(judge, criterion, doc, a, b, rep)``  ``Cached(PreferenceVerdict)``
``await pool.aclose()``                                  closes clients and the cache (lifespan finally)
======================================================== ===============================================

Caching rule: the key is ``service.caching.cache.cache_key(model, messages, parameters)`` where ``messages`` are the
exact chat messages of the (first) call and ``parameters`` the judge's sampling settings plus the kind of
call; the QA method keys on its generation prompt plus a hash of the article and ``n_questions``; a pairwise
call adds its repetition number, so ``repetitions: 3`` asks three times rather than reading one answer
thrice. A hit answers with ``cached=True`` and no call. Concurrent identical calls run once (SingleFlight).
Failed calls are not cached. The concurrency bound per judge is the client's own semaphore.

Accounting rule: a live call (the caller that started it; callers merged into it or answered from the cache
get ``calls=0``) is counted per judge and kind in ``cj_judge_calls_total`` (outcome), its tokens (the replies'
``usage``) in ``cj_judge_input_tokens_total`` / ``cj_judge_output_tokens_total`` and, when the judge has prices in
JUDGES_FILE (``price_in_per_mtok`` / ``price_out_per_mtok``, US dollars per million tokens), its cost in
``cj_judge_cost_usd_total``; it runs inside a judge-call span (``service.observability.tracing``). Every answer,
cached or not, says whether the reply's model differs from the judge's configured ``model``
(``service.judging.model_check``: ``model_mismatch``); the first such reply per judge and model is logged as a
warning (``judge.model_mismatch``), and each live one counted in ``cj_judge_model_mismatch_total``.

Breaker rule: every live call passes its judge's circuit breaker (``service.judging.breaker``); only provider faults
(timeouts, connection failures, 408/429/5xx) count against it, and while a probe is in flight after the
cool-down the other calls wait for its outcome (at most BREAKER_PROBE_WAIT_S). Replies are capped at
JUDGE_MAX_REPLY_BYTES (``judges.transport``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from service.caching.cache import SingleFlight, cache_key, make_cache
from service.caching.screen_memo import ScreenMemo
from service.config.settings import Settings
from service.errors import InvalidRequestError, JudgeNotConfiguredError
from service.judging.breaker import CircuitBreakers
from service.judging.groups import check_cascade_stages, check_panel_members, load_cascades, load_panels
from service.judging.model_check import is_model_mismatch
from service.judging.rubrics import Rubric, load_rubrics, rubric_messages
from service.observability.logging import EventLogger
from service.observability.metrics import ServiceMetrics
from service.observability.tracing import Tracing

__all__ = ["NO_JUDGE_HELP", "Cached", "JudgePool"]

T = TypeVar("T")

NO_JUDGE_HELP = (
    "no judge is configured, so the service cannot call one. To configure judges, set JUDGES_FILE to a JSON "
    "file like service/judges.example.json (per judge: name, model, base_url, api_key_env, prompt_family, ...) "
    "and export the API key in the environment variable that api_key_env names, then restart the service. "
    "Requests that carry their own verdict (judge_score and/or judge_logprobs, or compare preferences) "
    "work without a judge."
)
# Fields of a judge's configuration that do not change its answers (kept out of the cache key).
_NOT_IN_KEY = {
    "name", "api_key_env", "max_concurrency", "timeout_s", "attempt_timeout_s", "max_retries", "base_url",
    "price_in_per_mtok", "price_out_per_mtok",
}  # fmt: skip


@dataclass(frozen=True)
class Cached(Generic[T]):
    """A judge answer, whether it came from the cache, the live calls it cost this caller (0 or 1) and whether
    the reply named another model than the judge's configured one."""

    value: T
    cached: bool
    calls: int = 0
    model_mismatch: bool = False


class JudgePool:
    """The configured judges' clients, the answer cache and the single-flight table of one app."""

    def __init__(
        self, settings: Settings, metrics: ServiceMetrics, logger: EventLogger, tracing: Tracing | None = None
    ) -> None:
        self._settings = settings
        self._metrics = metrics
        self._logger = logger
        self._tracing = tracing if tracing is not None else Tracing()
        self._mismatches_logged: set[tuple[str, str]] = set()  # (judge, reply model) already warned about
        self._configs: dict[str, Any] = {}
        self._clients: dict[str, Any] = {}
        self._flight = SingleFlight()
        self.cache: Any = None
        self.screened = ScreenMemo()  # injection-screen findings of the texts judged in this process
        self.breakers = CircuitBreakers(
            settings.jobs.breaker_failures,
            settings.jobs.breaker_cooldown_s,
            probe_wait_s=settings.breaker_probe_wait_s,
        )
        self.rubrics: dict[str, Rubric] = load_rubrics(settings.rubrics_file)  # RubricError stops start-up
        self.panels: dict[str, tuple[str, ...]] = load_panels(settings.panels_file)  # PanelConfigError: likewise
        self.cascades: dict[str, tuple[str, ...]] = load_cascades(settings.cascades_file)  # CascadeConfigError: too

    async def start(self) -> None:
        """Read JUDGES_FILE (if set), open one client per judge, and build the cache (Redis or LRU).

        A broken JUDGES_FILE or a judge whose ``api_key_env`` variable is unset raises ``JudgeConfigError``
        naming the file or variable: the service refuses to start rather than run without a judge it was
        told to use.
        """
        from judges.client import JudgeClient
        from judges.config import load_judge_configs

        self.cache = make_cache(
            self._settings.redis_url, max_entries=self._settings.cache_max_entries, logger=self._logger
        )
        if self._settings.judges_file is not None:
            self._configs = dict(load_judge_configs(self._settings.judges_file))
            for name, config in self._configs.items():  # one at a time, so aclose() closes those already open

                def count_format_retry(kind: str, judge: str = name) -> None:
                    self._metrics.format_retries.inc(judge, kind)

                self._clients[name] = JudgeClient(
                    config,
                    logger=self._logger,  # JSON retry/failure events with the request id
                    on_format_retry=count_format_retry,
                    max_reply_bytes=self._settings.judge_max_reply_bytes,
                )
        check_panel_members(self.panels, list(self._configs))  # a panel of unconfigured judges stops start-up
        check_cascade_stages(self.cascades, list(self._configs))  # likewise a cascade
        backend = "redis" if self._settings.redis_url else "memory"
        self._logger.info("judges.configured", judges=list(self._configs), cache=backend)

    async def aclose(self) -> None:
        """Close every client and the cache; errors of one do not stop the others."""
        clients, self._clients = self._clients, {}
        for name, client in clients.items():
            try:
                await client.aclose()
            except Exception as error:  # noqa: BLE001 - closing must not mask shutdown
                self._logger.warning("judge.close_failed", judge=name, error=type(error).__name__)
        if self.cache is not None:
            await self.cache.aclose()

    def rubric_names(self) -> list[str]:
        """Criteria configured in RUBRICS_FILE."""
        return list(self.rubrics)

    def names(self) -> list[str]:
        """Configured judges, in JUDGES_FILE order."""
        return list(self._configs)

    def config(self, name: str) -> Any | None:
        """The JudgeConfig of a configured judge, or None."""
        return self._configs.get(name)

    def total_concurrency(self) -> int:
        """The sum of the configured judges' ``max_concurrency`` (0 without judges)."""
        return sum(int(config.max_concurrency) for config in self._configs.values())

    def default_judge(self) -> str | None:
        """DEFAULT_JUDGE when set, else the first configured judge, else None."""
        if self._settings.default_judge:
            return self._settings.default_judge
        return next(iter(self._configs), None)

    def client(self, name: str) -> Any:
        """The client of a configured judge; 422 with set-up help when none is configured, 422 for others."""
        if not self._clients:
            raise JudgeNotConfiguredError(NO_JUDGE_HELP)
        client = self._clients.get(name)
        if client is None:
            raise InvalidRequestError(
                f"judge {name!r} is not configured for live calls; configured judges: {', '.join(self._clients)}. "
                "To calibrate a verdict you already have, send judge_score / judge_logprobs instead.",
                allowed=list(self._clients),
            )
        return client

    def _parameters(self, name: str, kind: str, **extra: Any) -> dict[str, Any]:
        config = msgspec.structs.asdict(self._configs[name])
        params = {key: value for key, value in config.items() if key not in _NOT_IN_KEY}
        return {**params, "kind": kind, **extra}

    async def _cached(
        self, name: str, kind: str, key: str, call: Callable[[], Awaitable[T]], type_: type[T]
    ) -> Cached[T]:
        raw = await self.cache.get(key)
        if raw is not None:
            try:
                value = msgspec.msgpack.decode(raw, type=type_)
            except msgspec.DecodeError:
                value = None  # an entry from an older layout: treat as a miss and overwrite it
            if value is not None:
                self._metrics.cache.inc("hit")
                return Cached(value, True, model_mismatch=self._model_mismatch(name, value))
        self._metrics.cache.inc("miss")
        started_here = False  # this caller started the call (rather than joining one in flight)

        async def once() -> T:
            breaker = self.breakers.of(name)
            # An open breaker fails the item at once; a half-open one makes it wait for the probe's outcome.
            await breaker.before_call()
            with self._tracing.judge_call(name, self._configs[name].model, kind) as span:
                started = time.perf_counter()
                try:
                    result = await call()
                except Exception as error:
                    breaker.record_outcome(error)  # only provider faults count (service/judging/breaker.py)
                    self._metrics.judge_calls.inc(name, kind, type(error).__name__)
                    span.finish(type(error).__name__)
                    raise
                except BaseException:
                    breaker.abandon()
                    span.finish("cancelled")
                    raise
                finally:
                    self._metrics.judge_latency.observe(time.perf_counter() - started, name, kind)
                breaker.record_success()
                self._metrics.judge_calls.inc(name, kind, "ok")
                self._count_usage(name, kind, result)
                span.finish(
                    "ok",
                    prompt_tokens=getattr(result, "prompt_tokens", None),
                    completion_tokens=getattr(result, "completion_tokens", None),
                    reply_model=getattr(result, "reply_model", None),
                )
            await self.cache.set(key, msgspec.msgpack.encode(result), self._settings.cache_ttl_s)
            return result

        def start() -> Awaitable[T]:
            nonlocal started_here
            started_here = True
            return once()

        value = await self._flight.run(key, start)
        return Cached(value, False, calls=1 if started_here else 0, model_mismatch=self._model_mismatch(name, value))

    def _count_usage(self, name: str, kind: str, result: Any) -> None:
        """Tokens (the replies' usage), cost (when the judge has prices) and a model mismatch of one live call."""
        config = self._configs[name]
        prompt_tokens = int(getattr(result, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(result, "completion_tokens", 0) or 0)
        self._metrics.judge_input_tokens.add(prompt_tokens, name, kind)
        self._metrics.judge_output_tokens.add(completion_tokens, name, kind)
        cost = config.cost_usd(prompt_tokens, completion_tokens)
        if cost is not None:
            self._metrics.judge_cost.add(cost, name, kind)
        reply_model = getattr(result, "reply_model", None)
        if is_model_mismatch(config.model, reply_model):
            self._metrics.model_mismatches.inc(name, reply_model)

    def _model_mismatch(self, name: str, value: Any) -> bool:
        """Whether ``value``'s reply named another model than the judge's (warned once per judge and model)."""
        config = self._configs.get(name)
        reply_model = getattr(value, "reply_model", None)
        if config is None or not isinstance(reply_model, str) or not is_model_mismatch(config.model, reply_model):
            return False
        if (name, reply_model) not in self._mismatches_logged:
            self._mismatches_logged.add((name, reply_model))
            self._logger.warning(
                "judge.model_mismatch",
                judge=name,
                configured_model=config.model,
                reply_model=reply_model,
                detail="the judge's calibration was fitted on the configured model; answers from this one are "
                "flagged judge_model_mismatch",
            )
        return True

    async def direct(self, name: str, criterion: str, document: str, summary: str) -> Cached[Any]:
        """The judge's 1..5 verdict on the summary for a criterion (the judge's prompt family)."""
        from judges.prompts.families import direct_prompt
        from judges.results import DirectVerdict

        client = self.client(name)
        config = self._configs[name]
        rubric = self.rubrics.get(criterion)
        if rubric is not None:  # the user's criterion: the rubric's prompt and scale (service.judging.rubrics)
            messages = rubric_messages(rubric, document, summary)
            key = cache_key(config.model, messages, self._parameters(name, "score"))
            return await self._cached(
                name, "score", key, lambda: client.score_messages(messages, n_labels=rubric.scale_max), DirectVerdict
            )
        messages = direct_prompt(criterion, document, summary, prompt_family=config.prompt_family)
        key = cache_key(config.model, messages, self._parameters(name, "score"))
        return await self._cached(  # the messages built once: for the key and the call (client.score builds them so)
            name, "score", key, lambda: client.score_messages(messages, n_labels=5), DirectVerdict
        )

    async def faithfulness_direct(self, name: str, document: str, summary: str) -> Cached[Any]:
        """The factuality module's direct 1..5 faithfulness verdict."""
        from judges.factuality.methods import judge_faithfulness_direct
        from judges.factuality.prompts import direct_faithfulness_messages
        from judges.results import DirectVerdict

        client = self.client(name)
        messages = direct_faithfulness_messages(document, summary)
        key = cache_key(self._configs[name].model, messages, self._parameters(name, "faithfulness_direct"))
        return await self._cached(
            name,
            "faithfulness_direct",
            key,
            lambda: judge_faithfulness_direct(client, document, summary),
            DirectVerdict,
        )

    async def faithfulness_qa(self, name: str, document: str, summary: str, n_questions: int) -> Cached[Any]:
        """The factuality module's QA verdict (questions from the summary answered from the article)."""
        from judges.factuality.methods import QAFactuality, judge_faithfulness_qa
        from judges.factuality.prompts import qa_generation_messages

        client = self.client(name)
        messages = qa_generation_messages(summary, n_questions)
        document_hash = hashlib.sha256(document.encode("utf-8")).hexdigest()
        params = self._parameters(name, "faithfulness_qa", n_questions=n_questions, document_sha256=document_hash)
        key = cache_key(self._configs[name].model, messages, params)
        return await self._cached(
            name,
            "faithfulness_qa",
            key,
            lambda: judge_faithfulness_qa(client, document, summary, n_questions=n_questions),
            QAFactuality,
        )

    async def faithfulness_sentences(self, name: str, document: str, summary: str) -> Cached[Any]:
        """The sentence-level fact-check (``judges.factuality.sentence_check``): a verdict per summary sentence."""
        from judges.factuality.sentence_check import (
            SentenceFactuality,
            judge_faithfulness_sentences,
            sentence_check_messages,
            split_sentences,
        )

        client = self.client(name)
        messages = sentence_check_messages(document, split_sentences(summary))
        key = cache_key(self._configs[name].model, messages, self._parameters(name, "faithfulness_sentences"))
        return await self._cached(
            name,
            "faithfulness_sentences",
            key,
            lambda: judge_faithfulness_sentences(client, document, summary),
            SentenceFactuality,
        )

    async def prefer(
        self, name: str, criterion: str, document: str, first: str, second: str, repetition: int
    ) -> Cached[Any]:
        """The judge's preference between two texts shown in this order, for one repetition."""
        from judges.prompts.families import pairwise_prompt
        from judges.results import PreferenceVerdict

        client = self.client(name)
        config = self._configs[name]
        messages = pairwise_prompt(criterion, document, first, second, prompt_family=config.prompt_family)
        key = cache_key(config.model, messages, self._parameters(name, "prefer", repetition=repetition))
        return await self._cached(
            name, "prefer", key, lambda: client.prefer(criterion, document, first, second), PreferenceVerdict
        )
