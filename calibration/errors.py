"""The calibration core's own exceptions.

Every bad input to ``calibration`` raises one of these, with a message that names the offending value and
the rule it broke; the service maps them to RFC 9457 problem+json (422) in one place.
"""

from __future__ import annotations

__all__ = [
    "ArtifactError",
    "CalibrationError",
    "ConvergenceError",
    "EmptyCalibrationError",
    "InvalidAlphaError",
    "InvalidProbabilitiesError",
    "LabelsError",
    "ScoreOutOfRangeError",
    "SelfComparisonError",
    "UnknownCandidateError",
    "UnknownMethodError",
]


class CalibrationError(ValueError):
    """Base class: an input that the calibration core refuses, with the value and the rule in the message."""


class InvalidAlphaError(CalibrationError):
    """The miscoverage level alpha is not a finite number strictly between 0 and 1."""


class EmptyCalibrationError(CalibrationError):
    """A calibration set (or a group of one) holds no item, or arrays of different lengths were given."""


class ScoreOutOfRangeError(CalibrationError):
    """A judge score or label lies outside the label scale 1..K (or is not an integer where one is needed)."""


class InvalidProbabilitiesError(CalibrationError):
    """Log-probabilities or probabilities are missing, NaN, of the wrong shape, or not renormalisable."""


class UnknownMethodError(CalibrationError):
    """A conformal or ranking method name that the core does not implement."""


class UnknownCandidateError(CalibrationError):
    """A pairwise verdict names a candidate that is not in the tournament's candidate list."""


class SelfComparisonError(CalibrationError):
    """A pairwise verdict compares a candidate with itself."""


class ConvergenceError(CalibrationError):
    """An iterative estimator (Bradley-Terry) did not converge within its iteration budget."""


class ArtifactError(CalibrationError):
    """A thresholds artifact is missing, malformed, of the wrong format version, or inconsistent.

    The message always names the file (when there is one) and the problem.
    """


class LabelsError(CalibrationError):
    """A labelled JSON Lines file (or upload) that the labels reader refuses.

    Attributes: ``source`` (file name or upload name), ``line`` (1-based, or None for the whole file), ``field``
    (the offending field, or None) and ``problem``. ``str(error)`` reads ``"<source>:<line>: <field>: <problem>"``.
    """

    def __init__(self, source: str, line: int | None, field: str | None, problem: str) -> None:
        self.source = source
        self.line = line
        self.field = field
        self.problem = problem
        where = source if line is None else f"{source}:{line}"
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")
