"""A typed client, synchronous (``Client``) and asynchronous (``AsyncClient``), for the Conformal Judge REST API."""

from .async_client import AsyncClient
from .calls import PollPolicy
from .errors import ApiError, ConformalJudgeError, JobTimeout, TransportError
from .monitoring import EProcessPoint, FeedbackRefusal, FeedbackResult, MonitorCell, MonitorState
from .results import (
    Activation,
    BatchItem,
    BatchResult,
    CalibrationJob,
    CompareResult,
    Guarantee,
    Health,
    HealthCheck,
    JobAccepted,
    JobOutcome,
    JobStatus,
    PairResult,
    Problem,
    ScoreResult,
)
from .retry import RetryPolicy
from .sync_client import Client

__all__ = [
    "Activation",
    "ApiError",
    "AsyncClient",
    "BatchItem",
    "BatchResult",
    "CalibrationJob",
    "Client",
    "CompareResult",
    "ConformalJudgeError",
    "EProcessPoint",
    "FeedbackRefusal",
    "FeedbackResult",
    "Guarantee",
    "Health",
    "HealthCheck",
    "JobAccepted",
    "JobOutcome",
    "JobStatus",
    "JobTimeout",
    "MonitorCell",
    "MonitorState",
    "PairResult",
    "PollPolicy",
    "Problem",
    "RetryPolicy",
    "ScoreResult",
    "TransportError",
]
