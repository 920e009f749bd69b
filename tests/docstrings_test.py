"""Docstrings name what is there: the modules a package's docstring lists exist, and every
`tf_fusedprop.<...>` a docstring names resolves (a module, or an attribute of one)."""

import ast
import importlib
import importlib.util
import os
import pkgutil
import re

from tests import testing_utils as tu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The packages whose docstrings are maps of their modules.
PACKAGES = ("tf_fusedprop", "tf_fusedprop.experiment", "tf_fusedprop.networks", "time_to_quality")
#: A name a package's docstring lists: a table's first cell, a bullet's lead, or `name` (what it is).
_LISTED = re.compile(r"^\| `([a-z_][a-z0-9_]*)` \||^\* `([a-z_][a-z0-9_]*)`:|`([a-z_][a-z0-9_]*)` \(", re.MULTILINE)
_DOTTED = re.compile(r"`(tf_fusedprop(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def _package(name):
    if name == "time_to_quality":  # benchmarks/time_to_quality, imported as the benchmarks import it
        import sys

        sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    return importlib.import_module(name)


def _resolves(dotted):
    """Whether `a.b.c` is a module or an attribute chain of one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(target, part):
                return False
            target = getattr(target, part)
        return True
    return False


def _python_files():
    for top in ("tf_fusedprop", "benchmarks", "train.py"):
        path = os.path.join(ROOT, top)
        if path.endswith(".py"):
            yield path
            continue
        for directory, _, names in os.walk(path):
            yield from (os.path.join(directory, name) for name in sorted(names) if name.endswith(".py"))


class DocstringsTest(tu.TestCase):
    def test_a_packages_docstring_lists_only_its_modules_and_attributes(self):
        for name in PACKAGES:
            package = _package(name)
            modules = {info.name for info in pkgutil.iter_modules(package.__path__)}
            named = {word for match in _LISTED.findall(package.__doc__) for word in match if word}
            self.assertTrue(named, name)
            missing = sorted(
                word
                for word in named
                if word not in modules and not hasattr(package, word) and importlib.util.find_spec(word) is None
            )
            self.assertEqual(missing, [], f"{name}'s docstring names what it does not hold")

    def test_every_tf_fusedprop_name_in_a_docstring_resolves(self):
        broken = []
        for path in _python_files():
            with open(path) as f:
                tree = ast.parse(f.read())
            nodes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
            for node in nodes:
                for dotted in _DOTTED.findall(ast.get_docstring(node) or ""):
                    if not _resolves(dotted.rstrip(".")):
                        broken.append(f"{os.path.relpath(path, ROOT)}: {dotted}")
        self.assertEqual(broken, [])
