"""An Inspect (``inspect_ai``) scorer that asks the Conformal Judge service: ``conformal_judge``.

Each sample is one ``POST /v1/score``: the model's completion is the text judged (``summary``) and the sample's
input the document (or ``document_from(state)``); the sample id becomes the ``item_id``. The ``Score`` has

* ``value``: ``CORRECT`` when the service's certified decision is ``accept`` and the point is at least
  ``min_point``, else ``INCORRECT``; the metrics ``accuracy`` and ``stderr`` are then the accepted share;
* ``answer``: the calibrated point label, as text;
* ``explanation``: the point, the prediction set, the decision and the service's reason;
* ``metadata``: ``verdict_metadata`` (``prediction_set``, ``decision``, ``confidence``, ``guarantees`` ...).

A failure is never a score. ``on_error="raise"`` (the default) raises the client's ``ApiError`` /
``TransportError`` from the scorer, so Inspect records the sample as an error (and stops the eval unless
``fail_on_error`` lets it go on). ``on_error="unscored"`` returns ``Score.unscored(reason="scoring_failed")``
instead: a NaN value that Inspect's metrics skip, with the problem in ``explanation`` and ``metadata["error"]``.

Offline: nothing here downloads anything, but Inspect's mock model (``mockllm/model``) counts the tokens of a reply
with tiktoken when the reply carries no token usage, and tiktoken downloads its encoding table on first use.
``scripted_model(completions)`` gives a mock model whose replies carry their usage, so an eval with it needs no
network beyond the service (docs/integrations.md runs this example offline in a test)::

    task = Task(dataset=[Sample(input=article, id="doc7")], solver=generate(),
                scorer=conformal_judge(ServiceConnection("http://localhost:8000"), ScoreSpec(criterion="coherence")))
    [log] = eval(task, model=scripted_model(["The library closes in August."]), display="none")

Needs inspect_ai: ``pip install './client[inspect]'``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from ..errors import ApiError, ConformalJudgeError
from ..results import ScoreResult
from .verdicts import ScoreSpec, ServiceConnection, explain, verdict_metadata

try:
    from inspect_ai.model import Model, ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
    from inspect_ai.solver import TaskState
except ImportError as missing:  # pragma: no cover - the message is the point
    raise ImportError(
        "conformal_judge_client.integrations.inspect needs inspect_ai: pip install 'conformal-judge-client[inspect]'"
    ) from missing

__all__ = ["conformal_judge", "scripted_model", "to_score"]

ErrorMode = Literal["raise", "unscored"]


def scripted_model(completions: Sequence[str], *, name: str = "mockllm/model") -> Model:
    """Inspect's mock model answering ``completions`` in order, each reply with its token usage (words counted), so
    that Inspect never counts tokens with tiktoken, whose encoding table is a download: an eval runs offline."""
    outputs = []
    for text in completions:
        output = ModelOutput.from_content(name, text)
        words = len(text.split())
        output.usage = ModelUsage(input_tokens=0, output_tokens=words, total_tokens=words)
        outputs.append(output)
    return get_model(name, custom_outputs=outputs)


def to_score(result: ScoreResult, *, min_point: int = 1) -> Score:
    """The Inspect ``Score`` of a verdict (see the module docstring)."""
    accepted = result.decision == "accept" and result.point >= min_point
    return Score(
        value=CORRECT if accepted else INCORRECT,
        answer=str(result.point),
        explanation=explain(result),
        metadata=verdict_metadata(result),
    )


def _unscored(error: ConformalJudgeError) -> Score:
    problem: dict[str, Any] = dict(error.raw) if isinstance(error, ApiError) else {"detail": str(error)}
    return Score.unscored(
        reason="scoring_failed",
        explanation=f"no verdict: {type(error).__name__}: {error}",
        metadata={"error": problem},
    )


@scorer(metrics=[accuracy(), stderr()])
def conformal_judge(
    connection: ServiceConnection,
    spec: ScoreSpec,
    *,
    min_point: int = 1,
    on_error: ErrorMode = "raise",
    document_from: Callable[[TaskState], str | None] | None = None,
) -> Scorer:
    """A scorer that sends each sample's completion to the service's ``POST /v1/score`` and scores its verdict."""
    if on_error not in ("raise", "unscored"):
        raise ValueError(f"on_error must be 'raise' or 'unscored', not {on_error!r}")

    async def score(state: TaskState, target: Target) -> Score:
        document = document_from(state) if document_from is not None else state.input_text
        body = spec.body(document=document, summary=state.output.completion, item_id=str(state.sample_id))
        try:
            async with connection.async_client() as client:
                result = await client.score(body)
        except ConformalJudgeError as error:
            if on_error == "raise":
                raise
            return _unscored(error)
        return to_score(result, min_point=min_point)

    return score
