"""The local judge study: a real 135M judge (SmolLM2-135M-Instruct on llama.cpp's OpenAI-compatible server,
``make local-judge``) recorded on SummEval and calibrated with the service's defaults.

``python -m offline local-judge [--store reports/local-judge/answers.sqlite]`` (``make local-judge-report``):

================  ===============================================================================================
module            holds
================  ===============================================================================================
``recorded.py``   the committed answers (``recorded.json`` beside it): export from the answer store, read back,
                  joined with the human labels into the labelled format (``artifact.labels``)
``study.py``      skill against the human labels, and the service's answers on unseen documents (fit on one half
                  of the documents, serve the other, both ways) beside the no-information baseline
``page.py``       the report page (``docs/local-judge.md``)
``command.py``    the command: export (with ``--store``), calibrate, study, page
================  ===============================================================================================
"""
