"""Benchmarks, runnable as scripts (`python benchmarks/<name>.py`) and importable by the tests."""
