"""Monitoring the served guarantees from human feedback: labels of served verdicts into change detectors, kept
in Redis, whose alarms escalate their cells' answers (the statistics: ``calibration.monitoring``).

======================== ===========================================================================
module                   role
======================== ===========================================================================
``cells``                which monitor an answer feeds, what it watches, what one label says of it
``store``                a monitor's state, open documents and seen ids in Redis, updated atomically, quotas
``batch``                one monitor's update applied item by item (duplicates, corrections, closing documents)
``feedback``             POST /v1/feedback's items: recompute what was served, record the labels
``board``                the raised alarms every answer checks: a cached copy, refreshed cheaply
``views``                a monitor as GET /v1/monitor shows it, and the admin reset (audited)
``recalibration``        a monitor's kept labelled rows as the body of a calibration job
``metrics``              the monitors' Prometheus gauges
``monitors``             what one process holds: store, board, gauges, the fixed settings
======================== ===========================================================================

The HTTP routes are ``service.http.routes.monitoring``; an alarm changes answers in ``service.scoring.monitor_alarm``.
Nothing is imported here.
"""
