"""The page's last section: where the studies that are not part of ``calibrate`` write their reports.

It holds no figure: those studies' numbers are in their own reports (rerun the command).
"""

from __future__ import annotations

from offline.results_page.figures import Figures
from offline.results_page.page import Section
from offline.results_page.reports import Reports

__all__ = ["studies_section"]

ROWS = (
    (
        "python -m offline decisions",
        "accept share and error among accepted on unseen documents, per cell, tolerance and level (document-level "
        "bound, and the item-level bound for comparison, labelled as not valid with documents); per-label tables; "
        "quality gates; the operating curve",
        "`reports/decisions/decisions.md`, `operating_curve.png`, `score_vs_label.png`",
    ),
    (
        "python -m offline pairwise-decisions",
        "accept share and human agreement among accepted pairs on held-out questions (Vicuna80) and battles (Arena "
        "PPR), per judge and panel; question-resampling validity check",
        "`reports/pairwise_decisions/summary.json`, `accept_vs_agreement.png`",
    ),
    (
        "python -m offline estimates",
        "coverage and width of system-level intervals vs the number of human labels; rank-set coverage and size",
        "`reports/estimates/estimates.md`",
    ),
    (
        "python -m offline local-judge",
        "a real small judge served on this machine (`make local-judge`): its recorded SummEval verdicts, its skill "
        "against the human labels, and the service's sets, accept share and per-label figures on unseen documents "
        "beside the label distribution alone",
        "[docs/local-judge.md](local-judge.md) (committed, rewritten by the command)",
    ),
    (
        "python -m offline halves",
        "the served recipe fitted on half the documents, checked on the other half, both ways",
        "`reports/conformal/halves.md`",
    ),
)


def studies_section(reports: Reports, f: Figures) -> Section:
    """The table of the other studies' commands and reports."""
    lines = [
        "Each writes its tables and figures under `reports/` (not committed: rerun the command):\n",
        "| command | what it measures | report |",
        "|---|---|---|",
        *(f"| `{command}` | {what} | {where} |" for command, what, where in ROWS),
    ]
    return Section("Studies of certified decisions, pairwise decisions and estimates", (), "\n".join(lines) + "\n")
