"""Experiment configs for `train.py`: one module per experiment, each with `get_config()`."""
