"""The import graph of a package, read from its source with `ast` (nothing is imported).

`module_graph(root)` lists, for every module under `root` (a package directory), the modules
of the same package it imports at module level and inside functions, and every private name
(`_x`) it takes from another module of the package, as `from m import _x` or as `m._x` on a
module it imported. `find_cycle(edges)` returns one import cycle, or None for a DAG.
tests/test_layout.py holds jaxmj to its layering with them.
"""

from __future__ import annotations

import ast
import dataclasses
import os


@dataclasses.dataclass
class Graph:
  modules: set[str]
  top: dict[str, set[str]]  # module -> modules it imports at module level
  inner: set[tuple[str, str]]  # (module, imported module) imports inside functions
  private: set[tuple[str, str, str]]  # (module, defining module, private name)


def _modules(root: str) -> dict[str, str]:
  """Dotted module name -> file, for every .py file under the package directory `root`."""
  base = os.path.dirname(os.path.abspath(root))
  out = {}
  for folder, _, files in os.walk(root):
    for name in files:
      if name.endswith(".py"):
        path = os.path.join(folder, name)
        dotted = os.path.relpath(path, base)[:-3].replace(os.sep, ".")
        out[dotted.removesuffix(".__init__")] = path
  return out


def _target(modules, name: str) -> str | None:
  """The package module `name` is, or lives in (an attribute of a module); None outside."""
  while name and name not in modules:
    name = name.rpartition(".")[0]
  return name or None


def _function_nodes(tree) -> set[int]:
  inner = set()
  for node in ast.walk(tree):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
      inner.update(id(n) for n in ast.walk(node) if n is not node)
  return inner


def module_graph(root: str) -> Graph:
  modules = _modules(root)
  g = Graph(set(modules), {m: set() for m in modules}, set(), set())
  for mod, path in modules.items():
    with open(path) as f:
      tree = ast.parse(f.read(), path)
    inner = _function_nodes(tree)
    package = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
    aliases = {}  # local name -> module, for `m._x` attribute reads
    for node in ast.walk(tree):
      names = []  # (imported module, private name or None)
      if isinstance(node, ast.Import):
        for a in node.names:
          target = _target(modules, a.name)
          names.append((target, None))
          if target and a.asname:
            aliases[a.asname] = target
      elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
          parts = package.split(".")[: len(package.split(".")) - node.level + 1]
          base = ".".join(parts + ([base] if base else []))
        for a in node.names:
          full = f"{base}.{a.name}"
          if full in modules:
            names.append((full, None))
            aliases[a.asname or a.name] = full
          else:
            private = a.name if a.name.startswith("_") and not a.name.startswith("__") else None
            names.append((_target(modules, base), private))
      for target, private in names:
        if target is None or target == mod:
          continue
        if id(node) in inner:
          g.inner.add((mod, target))
        else:
          g.top[mod].add(target)
        if private:
          g.private.add((mod, target, private))
    for node in ast.walk(tree):
      if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
          and node.value.id in aliases and node.attr.startswith("_")
          and not node.attr.startswith("__")):
        g.private.add((mod, aliases[node.value.id], node.attr))
  return g


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
  """One cycle [a, b, ..., a] of the directed graph `edges`, or None if it has none."""
  state = {}  # node -> 1 on the current path, 2 done
  for start in sorted(edges):
    if state.get(start):
      continue
    path, stack = [start], [iter(sorted(edges.get(start, ())))]
    state[start] = 1
    while stack:
      nxt = next(stack[-1], None)
      if nxt is None:
        state[path.pop()] = 2
        stack.pop()
      elif state.get(nxt) == 1:
        return path[path.index(nxt):] + [nxt]
      elif not state.get(nxt):
        state[nxt] = 1
        path.append(nxt)
        stack.append(iter(sorted(edges.get(nxt, ()))))
  return None
