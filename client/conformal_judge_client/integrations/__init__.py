"""Adapters for the eval tools users run: a deepeval metric (``integrations.deepeval``), an Inspect scorer
(``integrations.inspect``) and a Langfuse score writer (``integrations.langfuse``).

Each adapter imports its tool inside its own module, so ``import conformal_judge_client`` stays httpx-only; install
the tool with the client's extra of the same name (``pip install './client[deepeval]'``, ``[inspect]``,
``[langfuse]``, or ``[integrations]`` for all three). ``integrations.verdicts`` is what they share: the request
they send to ``POST /v1/score`` and how a verdict is worded and summarised.
"""
