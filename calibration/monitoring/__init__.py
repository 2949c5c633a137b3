"""Change detectors for the served guarantees: alarms whose false-alarm probability over a horizon of documents is
<= delta (mean time to a false alarm >= horizon / delta), with documents as the unit, and running failure rates
with confidence sequences.

===================== ==========================================================================================
``tally``             one document's labelled outcomes for one guarantee (labels, counted, failures, excess)
``detector``          one guarantee's change detector: a Shiryaev-Roberts e-detector, a mixture over bets
``rate_sequence``     the running failure rate and its empirical-Bernstein confidence sequence, O(1) state
``trail``             the cell's e-process over time in bounded memory: evenly spaced points and the latest
``monitor``           a cell: its guarantees, the weighted-mean detector, the alarm, its explanation, the trail,
                      the report
``paths``             the same rules vectorised over whole streams (studies, simulations)
``watched``           what a served cell watches, with which weights, and what one label says to each guarantee
===================== ==========================================================================================
"""

from calibration.monitoring.detector import (
    GUARANTEES,
    DetectorState,
    GuaranteeSpec,
    bets,
    e_value,
    prior,
    scaled_excess,
    start_detector,
    update_detector,
)
from calibration.monitoring.monitor import (
    Alarm,
    CellMonitor,
    CellReport,
    CellSpec,
    GuaranteeReport,
    GuaranteeState,
    cell_e_value,
    cell_log_e_value,
    cell_report,
    explain_alarm,
    observe_document,
    start_cell,
)
from calibration.monitoring.paths import cell_alarm_index, cell_e_path, detector_path, excess_path
from calibration.monitoring.rate_sequence import RateEstimate, RateSequence, rate_estimate, update_rate
from calibration.monitoring.tally import DocumentTally, add_item, check_tally, single_level_tally
from calibration.monitoring.trail import TRAIL_POINTS, Trail, TrailPoint, extend_trail, trail_points, trail_value
from calibration.monitoring.watched import watched_cell_spec, watched_outcome

__all__ = [
    "GUARANTEES",
    "TRAIL_POINTS",
    "Alarm",
    "CellMonitor",
    "CellReport",
    "CellSpec",
    "DetectorState",
    "DocumentTally",
    "GuaranteeReport",
    "GuaranteeSpec",
    "GuaranteeState",
    "RateEstimate",
    "RateSequence",
    "Trail",
    "TrailPoint",
    "add_item",
    "bets",
    "cell_alarm_index",
    "cell_e_path",
    "cell_e_value",
    "cell_log_e_value",
    "cell_report",
    "check_tally",
    "detector_path",
    "e_value",
    "excess_path",
    "explain_alarm",
    "extend_trail",
    "observe_document",
    "prior",
    "rate_estimate",
    "scaled_excess",
    "single_level_tally",
    "start_cell",
    "start_detector",
    "trail_points",
    "trail_value",
    "update_detector",
    "update_rate",
    "watched_cell_spec",
    "watched_outcome",
]
