"""The numbers of a record: which are finite, and a record made strict JSON (NaN and the
infinities as null)."""

import math


def finite_number(value):
    """Whether `value` is a finite int or float (not a bool, not None, NaN or an infinity)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def json_safe(value):
    """`value` (dicts and lists of them, nested) with NaN and infinities as null (strict JSON)."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
