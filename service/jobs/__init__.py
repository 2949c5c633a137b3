"""Durable scoring jobs on a Redis job queue (SAQ): submit, chunk, run on workers, keep results.

======================== ===========================================================================
module                   role
======================== ===========================================================================
``settings``             ``JobSettings``: the jobs', workers' and admission settings (``Settings.jobs``)
``intake``               a POST body -> chunks of item lines (cut by items and bytes), streamed
``tenancy``              the tenant of a request: a one-way digest of its API key (admin sees all)
``store``                job metadata, input chunks and result chunks in Redis (Lua scripts)
``queue``                the SAQ queue: one task per chunk
``runner``               one chunk scored with ``service.scoring.score.score_item``
``metrics``              job counters and gauges
``calibrating``          calibration jobs (POST /v1/calibrations): submit, run, activate, delete; their records
======================== ===========================================================================

The HTTP routes are ``service.http.routes.jobs``; the worker process is ``service.worker``. Nothing is imported here,
so reading the settings does not load the queue library.
"""
