"""Argument checks shared by the package, with the package's one-line error style."""

import numbers

__all__ = ["positive_int", "registered"]


def positive_int(name, value):
    """Returns `value` as an int if it is an integer >= 1; raises ValueError naming `name` otherwise."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer. Received: {name}={value!r}")
    return int(value)


def registered(registry, kind, name):
    """Returns `registry[name]`; raises ValueError listing the valid names (in the registry's order) otherwise."""
    try:
        return registry[name]
    except (KeyError, TypeError):
        valid = ", ".join(registry)
        raise ValueError(f"Unknown {kind}. Received: name={name!r}. Valid names: {valid}.") from None
