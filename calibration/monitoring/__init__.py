"""Anytime-valid monitors of the served guarantees: alarms with false-alarm probability <= delta over the whole
stream, with documents as the unit, and running failure rates with confidence sequences.

===================== ==========================================================================================
``tally``             one document's labelled outcomes for one guarantee (labels, counted, failures)
``eprocess``          one guarantee's alarm statistic: a mixture of betting test martingales over documents
``rate_sequence``     the running failure rate and its empirical-Bernstein confidence sequence, O(1) state
``monitor``           a cell: its guarantees, the weighted-mean e-process, the alarm and the report
``paths``             the same rules vectorised over whole streams (studies, simulations)
===================== ==========================================================================================
"""

from calibration.monitoring.eprocess import (
    GUARANTEES,
    EProcess,
    GuaranteeSpec,
    bets,
    e_value,
    prior,
    start_eprocess,
    update_eprocess,
)
from calibration.monitoring.monitor import (
    Alarm,
    CellMonitor,
    CellReport,
    CellSpec,
    GuaranteeReport,
    GuaranteeState,
    cell_e_value,
    cell_report,
    observe_document,
    start_cell,
)
from calibration.monitoring.paths import cell_alarm_index, cell_e_path, e_process_path
from calibration.monitoring.rate_sequence import RateEstimate, RateSequence, rate_estimate, update_rate
from calibration.monitoring.tally import DocumentTally, add_item, check_tally

__all__ = [
    "GUARANTEES",
    "Alarm",
    "CellMonitor",
    "CellReport",
    "CellSpec",
    "DocumentTally",
    "EProcess",
    "GuaranteeReport",
    "GuaranteeSpec",
    "GuaranteeState",
    "RateEstimate",
    "RateSequence",
    "add_item",
    "bets",
    "cell_alarm_index",
    "cell_e_path",
    "cell_e_value",
    "cell_report",
    "check_tally",
    "e_process_path",
    "e_value",
    "observe_document",
    "prior",
    "rate_estimate",
    "start_cell",
    "start_eprocess",
    "update_eprocess",
    "update_rate",
]
