"""The outbound judge side: prompts, the OpenAI-compatible client, and the reply parser.

Re-exports the public names of ``client``, ``config``, ``results``, ``distribution``, ``errors``, ``parse``,
``parse_choice`` and ``prompts``.
"""

from judges.client import JudgeClient
from judges.config import DEFAULT_MAX_REPLY_BYTES, NO_KEY_PLACEHOLDER, TOP_LOGPROBS, JudgeConfig, load_judge_configs
from judges.errors import (
    PROVIDER_FAULT_STATUSES,
    JudgeCallError,
    JudgeConfigError,
    JudgeError,
    JudgeReplyError,
    JudgeReplyTooLarge,
    UnknownPromptError,
)
from judges.parsing.choice import ParsedChoice, parse_choice
from judges.parsing.distribution import TokenLogprobs, score_distribution
from judges.parsing.reply import (
    RULES,
    ParsedScore,
    Preference,
    parse_preference,
    parse_rate,
    parse_score,
)
from judges.prompts.families import CRITERIA, PROMPT_FAMILIES, ChatMessage, direct_prompt, pairwise_prompt
from judges.results import Completion, DirectVerdict, PreferenceVerdict

__all__ = [
    "CRITERIA",
    "ChatMessage",
    "Completion",
    "DEFAULT_MAX_REPLY_BYTES",
    "DirectVerdict",
    "JudgeCallError",
    "JudgeClient",
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeError",
    "JudgeReplyError",
    "JudgeReplyTooLarge",
    "NO_KEY_PLACEHOLDER",
    "PROMPT_FAMILIES",
    "PROVIDER_FAULT_STATUSES",
    "ParsedChoice",
    "ParsedScore",
    "Preference",
    "PreferenceVerdict",
    "RULES",
    "TOP_LOGPROBS",
    "TokenLogprobs",
    "UnknownPromptError",
    "direct_prompt",
    "load_judge_configs",
    "pairwise_prompt",
    "parse_choice",
    "parse_preference",
    "parse_rate",
    "parse_score",
    "score_distribution",
]
