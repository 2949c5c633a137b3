"""Reference code that only tests use: the scores by method name (checked against the registry's kernels) and
the document-resampling check of PAC fits. Outside the product packages because no entry point reaches them."""
