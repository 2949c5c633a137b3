"""Calibration jobs (POST /v1/calibrations): a labelled body fitted into an artifact to activate.

=========== ==========================================================================================
module      role
=========== ==========================================================================================
``jobs``    the app's calibration jobs: submit, get, activate, delete; the worker's task (the rules)
``cells``   the labelled cells of a body and whether each can be fitted here
``fitting`` one job run: the fits per (cell, input kind) in a thread or a child process, the artifact
``records`` the jobs' records in Redis and their SAQ task name
=========== ==========================================================================================

Nothing is imported here.
"""
