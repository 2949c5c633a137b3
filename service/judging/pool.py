"""Live judge calls for the service: one client per configured judge, answers cached, identical calls merged.

======================================================== ===============================================
call                                                     result
======================================================== ===============================================
``pool = JudgePool(settings, metrics, logger)``          empty; ``await pool.start()`` in the lifespan
``await pool.start()``                                   reads JUDGES_FILE, opens clients and the cache
``pool.names()``                                         configured judges in JUDGES_FILE order
``await pool.direct(judge, criterion, doc, summary)``    ``Cached(value=DirectVerdict, cached=bool)``
``await pool.faithfulness_direct(judge, doc, summary)``  ``Cached(DirectVerdict)``
``await pool.faithfulness_qa(judge, doc, summary, n)``   ``Cached(QAFactuality)``
``await pool.faithfulness_sentences(judge, doc, summ)``  ``Cached(SentenceFactuality)``
``await pool.prefer(judge, criterion, doc, a, b, rep)``  ``Cached(PreferenceVerdict)``
``await pool.aclose()``                                  closes clients and the cache (lifespan finally)
======================================================== ===============================================

Caching rule: the key is ``service.judging.cache.cache_key(model, messages, parameters)`` where ``messages`` are the
exact chat messages of the (first) call and ``parameters`` the judge's sampling settings plus the kind of
call; the QA method keys on its generation prompt plus a hash of the article and ``n_questions``; a pairwise
call adds its repetition number, so ``repetitions: 3`` asks three times rather than reading one answer
thrice. A hit answers with ``cached=True`` and no call. Concurrent identical calls run once (SingleFlight).
Failed calls are not cached. The concurrency bound per judge is the client's own semaphore.

Breaker rule: every live call passes its judge's circuit breaker (``service.judging.breaker``); only provider faults
(timeouts, connection failures, 408/429/5xx) count against it, and while a probe is in flight after the
cool-down the other calls wait for its outcome (at most BREAKER_PROBE_WAIT_S). Replies are capped at
JUDGE_MAX_REPLY_BYTES (``judges.client``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from service.config.settings import Settings
from service.errors import InvalidRequestError, JudgeNotConfiguredError
from service.judging.breaker import CircuitBreakers
from service.judging.cache import SingleFlight, cache_key, make_cache
from service.judging.groups import check_cascade_stages, check_panel_members, load_cascades, load_panels
from service.judging.rubrics import Rubric, load_rubrics, rubric_messages
from service.observability.metrics import ServiceMetrics

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
_NOT_IN_KEY = {"name", "api_key_env", "max_concurrency", "timeout_s", "attempt_timeout_s", "max_retries", "base_url"}


@dataclass(frozen=True)
class Cached(Generic[T]):
    """A judge answer and whether it came from the cache."""

    value: T
    cached: bool


class JudgePool:
    """The configured judges' clients, the answer cache and the single-flight table of one app."""

    def __init__(self, settings: Settings, metrics: ServiceMetrics, logger: Any) -> None:
        self._settings = settings
        self._metrics = metrics
        self._logger = logger
        self._configs: dict[str, Any] = {}
        self._clients: dict[str, Any] = {}
        self._flight = SingleFlight()
        self.cache: Any = None
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
        from judges.client import JudgeClient, load_judge_configs

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
        """The client of a configured judge; 503 with set-up help when none is configured, 422 for others."""
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
                return Cached(value, True)
        self._metrics.cache.inc("miss")

        async def once() -> T:
            breaker = self.breakers.of(name)
            # An open breaker fails the item at once; a half-open one makes it wait for the probe's outcome.
            await breaker.before_call()
            started = time.perf_counter()
            try:
                result = await call()
            except Exception as error:
                breaker.record_outcome(error)  # only provider faults count (service/judging/breaker.py)
                self._metrics.judge_calls.inc(name, kind, type(error).__name__)
                raise
            except BaseException:
                breaker.abandon()
                raise
            finally:
                self._metrics.judge_latency.observe(time.perf_counter() - started, name, kind)
            breaker.record_success()
            self._metrics.judge_calls.inc(name, kind, "ok")
            await self.cache.set(key, msgspec.msgpack.encode(result), self._settings.cache_ttl_s)
            return result

        return Cached(await self._flight.run(key, once), False)

    async def direct(self, name: str, criterion: str, document: str, summary: str) -> Cached[Any]:
        """The judge's 1..5 verdict on the summary for a criterion (the judge's prompt family)."""
        from judges.client import DirectVerdict
        from judges.prompts import direct_prompt

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
        from judges.client import DirectVerdict
        from judges.factuality import judge_faithfulness_direct
        from judges.factuality_prompts import direct_faithfulness_messages

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
        from judges.factuality import QAFactuality, judge_faithfulness_qa
        from judges.factuality_prompts import qa_generation_messages

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
        """The sentence-level fact-check (``judges.sentence_check``): a verdict per summary sentence."""
        from judges.sentence_check import (
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
        from judges.client import PreferenceVerdict
        from judges.prompts import pairwise_prompt

        client = self.client(name)
        config = self._configs[name]
        messages = pairwise_prompt(criterion, document, first, second, prompt_family=config.prompt_family)
        key = cache_key(config.model, messages, self._parameters(name, "prefer", repetition=repetition))
        return await self._cached(
            name, "prefer", key, lambda: client.prefer(criterion, document, first, second), PreferenceVerdict
        )
