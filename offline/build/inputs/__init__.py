"""The build's inputs: loaders of the data directory's files (SummEval, FRANK, the recorded judges, pairwise
verdicts, Vicuna80, the arena battles, the FINESURE fact-checks), each checked on load (``errors.DataError``)."""
