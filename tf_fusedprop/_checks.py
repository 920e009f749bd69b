"""Argument checks shared by the package, with the package's one-line error style."""

import numbers

__all__ = ["Registry", "positive_int"]


def positive_int(name, value):
    """Returns `value` as an int if it is an integer >= 1; raises ValueError naming `name` otherwise."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer. Received: {name}={value!r}")
    return int(value)


class Registry:
    """The package's one way of naming things of one kind (losses, networks, datasets, forms,
    schedules, digit sets): `names()` in registration order, `get(name)` or a one-line error
    listing the valid names, and `name in registry`. A new thing is an entry of its registry.

    Args:
      kind: what an entry is, in the error ("network": "Unknown network. Received: ...").
      entries: `{name: entry}`.
      argument: the argument's name in the error (`name`).
      plural: what the valid names are called in the error (`names`).
    """

    def __init__(self, kind, entries, argument="name", plural="names"):
        self.kind, self.argument, self.plural = kind, argument, plural
        self._entries = dict(entries)

    def names(self):
        """The names, in registration order."""
        return tuple(self._entries)

    def items(self):
        """`(name, entry)` pairs, in registration order."""
        return tuple(self._entries.items())

    def __contains__(self, name):
        try:
            return name in self._entries
        except TypeError:  # unhashable
            return False

    def get(self, name):
        """The entry registered under `name`.

        Raises:
          ValueError: an unknown name, in one line listing the valid ones.
        """
        if name not in self:
            raise ValueError(
                f"Unknown {self.kind}. Received: {self.argument}={name!r}. "
                f"Valid {self.plural}: {', '.join(self._entries)}."
            )
        return self._entries[name]
