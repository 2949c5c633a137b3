"""The monitoring study (``python -m offline monitor``): seeded streams of recorded verdicts, unshifted and shifted,
through the change detectors of :mod:`calibration.monitoring`; its computation and report side by side.

===================== ==========================================================================================
``served``            what the service served for each labelled verdict: the one coupling to the artifact
``scenarios``         the streamed populations: no shift, one label harsher / more lenient, a model swap, the
                      extractive systems
``abstractive``       the calibration fitted on the abstractive systems only
``streams``           seeded document orders, labels to the alarm, the plain comparison, the information bound
``example``           one stream fed one document at a time (the figures)
``study``             every scenario on every cell: the rows
``checks``            the study's checks read from its rows
``report``            ``monitoring.json``, ``monitoring.md`` and the figures
``command``           the ``monitor`` subcommand
===================== ==========================================================================================
"""
