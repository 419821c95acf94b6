"""The package's layering: imports run one way (core -> stages -> recipe -> public utilities),
the runtime never imports the MJCF compiler, and no private name crosses modules.

Read from the source with `ast` (tests/import_graph.py); a cycle, an import against the layers
or a new import inside a function fails here with the modules named.
"""

import os
import subprocess
import sys

import pytest
from conftest import ROOT
from import_graph import find_cycle, module_graph

# Layers, lowest first: a module imports only modules of its own layer or below, and within
# a layer the imports form a DAG. The MJCF compiler (jaxmj.mjcf) is host-only and sits apart.
LAYERS = [
  ("core", ["jaxmj.types", "jaxmj.data", "jaxmj.enums", "jaxmj.pytree", "jaxmj.math",
            "jaxmj.constants", "jaxmj.scan", "jaxmj.visual", "jaxmj.names", "jaxmj.linalg",
            "jaxmj.source", "jaxmj.loops", "jaxmj.tracing_gc", "jaxmj.platform",
            "jaxmj.tangent_gate"]),
  ("smooth", ["jaxmj.smooth"]),
  ("collision", ["jaxmj.collision"]),
  ("actuation", ["jaxmj.actuation"]),
  ("constraint", ["jaxmj.constraint"]),
  ("solver", ["jaxmj.solver"]),
  ("sensor", ["jaxmj.sensor"]),
  ("data", ["jaxmj.io", "jaxmj.state", "jaxmj.datacheck"]),
  ("dynamics", ["jaxmj.dynamics"]),
  ("public", ["jaxmj", "jaxmj.bind", "jaxmj.physics", "jaxmj.conformance", "jaxmj.cli",
              "jaxmj.envs", "jaxmj.interop", "jaxmj.rendering", "jaxmj.camera",
              "jaxmj.trace_cache", "jaxmj.distance"]),
]

# Imports inside functions: each is one of these, with its reason.
INNER_IMPORTS = {
  ("jaxmj.types", "jaxmj.mjcf"): "Model.from_xml_path / from_xml_string compile MJCF: the "
  "loaders are Model's classmethods, and the runtime must import without the compiler",
  ("jaxmj.types", "jaxmj.mjcf.compose.write"): "Model.from_mjcf compiles a composed model",
  ("jaxmj.cli", "jaxmj"): "`jaxmj --help` answers without importing jax",
  ("jaxmj.cli", "jaxmj.tracing_gc"): "importing it imports jaxmj, hence jax: after parsing",
  ("jaxmj.cli", "jaxmj.trace_cache"): "importing it imports jax: after parsing",
  ("jaxmj.cli", "jaxmj.envs.train"): "`jaxmj train` needs brax (jaxmj[rl]); simulate does not",
  ("jaxmj.envs", "jaxmj.envs.gym"): "to_gymnasium needs gymnasium, an optional dependency",
  ("jaxmj.envs", "jaxmj.envs.train"): "load_policy needs brax and orbax (jaxmj[rl])",
  ("jaxmj.cli", "jaxmj.rendering"): "`jaxmj render` points mujoco at a headless GL first",
  ("jaxmj.cli", "jaxmj.envs"): "`jaxmj render --policy` films a task with its policy; "
  "rendering a file needs no environments",
  ("jaxmj.types", "jaxmj.interop"): "Model.from_mujoco reads MuJoCo's structures: interop "
  "imports mujoco and the compiler only when called",
  ("jaxmj.interop", "jaxmj.mjcf.compile.build"): "from_mujoco compiles the MJCF of an "
  "MjModel or MjSpec",
  ("jaxmj.interop", "jaxmj.mjcf.spec.parse"): "an MjSpec's MJCF is parsed with its folder "
  "for relative file names",
  ("jaxmj.interop", "jaxmj.mjcf.compile.inertia"): "from_mujoco re-weighs geoms whose size "
  "the MjModel holds exactly with the compiler's own volume formulas",
  ("jaxmj.interop", "jaxmj.mjcf.errors"): "an MjModel's MJCF naming files that are not found "
  "is refused with the way out",
  ("jaxmj.interop", "jaxmj.mjcf.assets.hfieldgrid"): "an MjModel with edited margins or sensor "
  "cutoffs gets the heightfield windows the compiler would size for them",
  ("jaxmj.mjcf.compile.build", "jaxmj.dynamics.lengthrange"): "the compiler simulates to "
  "find muscle length ranges (mj_setLengthRange), only for models that need it",
  ("jaxmj.mjcf.spec.parse", "jaxmj.mjcf.spec.urdf"): "a <robot> document is read by the URDF "
  "front end, which builds parse.py's Node tree",
  ("jaxmj.mjcf.compose.element", "jaxmj.mjcf.compose.attach"): "Element.attach delegates to "
  "attach.py, which builds on Element",
  ("jaxmj.mjcf.compose.element", "jaxmj.mjcf.compose.write"): "Element.to_xml_string and "
  "friends delegate to write.py, which reads Elements",
}

# The only runtime modules the compiler imports besides the core, with their reasons.
MJCF_REACHES = {
  "jaxmj.smooth.tendon": "tendon path geometry, evaluated with numpy at qpos0 (xp=np)",
  "jaxmj.smooth.fluid": "mju_geomSemiAxes, shared with the ellipsoid fluid model",
  "jaxmj.smooth.kinematics": "the sameframe classes' frame test (frames_near, same_rotation), "
  "which kinematics applies again to frames moved at run time",
  "jaxmj.collision.plan": "<size memory>: the arena holds the plan's contact slots",
  "jaxmj.collision.hfield": "the heightfield windows' size (cells_spanned), which "
  "jaxmj.geom_distance also computes at call time",
  "jaxmj.constraint.layout": "<size memory>: the arena holds the layout's efc rows",
  "jaxmj.sensor.driver": "sensor types the runtime lacks are refused when compiling",
  "jaxmj.dynamics.lengthrange": "mj_setLengthRange's simulation (inside build, see above)",
}

# The lazy facade jaxmj.mjcf imports its compiler by name on first use (PEP 562 __getattr__):
# not an edge of the graph, and no runtime module reads it.
PACKAGE = os.path.join(ROOT, "jaxmj")


@pytest.fixture(scope="module")
def graph():
  return module_graph(PACKAGE)


def _layer(mod: str) -> int | None:
  for rank, (_, prefixes) in enumerate(LAYERS):
    for p in prefixes:
      if mod == p or (p != "jaxmj" and mod.startswith(p + ".")):
        return rank
  return None


def _is_mjcf(mod: str) -> bool:
  return mod == "jaxmj.mjcf" or mod.startswith("jaxmj.mjcf.")


def _edges(graph) -> dict[str, set[str]]:
  """Module-level imports plus imports inside functions that are not listed exceptions."""
  edges = {m: set(t) for m, t in graph.top.items()}
  for m, t in graph.inner:
    if (m, t) not in INNER_IMPORTS:
      edges[m].add(t)
  return edges


def test_imports_form_a_dag(graph):
  assert find_cycle(_edges(graph)) is None, f"import cycle: {find_cycle(_edges(graph))}"


def test_the_checker_finds_a_planted_cycle(graph):
  assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
  assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
  edges = _edges(graph)
  edges["jaxmj.smooth.kinematics"].add("jaxmj.dynamics.forward")  # a stage reaching up
  cycle = find_cycle(edges)
  assert cycle is not None and "jaxmj.smooth.kinematics" in cycle


def test_every_module_has_a_layer(graph):
  assert [m for m in sorted(graph.modules) if not _is_mjcf(m) and _layer(m) is None] == []


def test_imports_run_down_the_layers(graph):
  """Core imports only core; a stage imports only its own layer and those below it."""
  up = [(m, t) for m, targets in _edges(graph).items() if not _is_mjcf(m)
        for t in targets if not _is_mjcf(t) and _layer(t) > _layer(m)]
  assert up == []


def test_runtime_never_imports_the_compiler(graph):
  runtime = [m for m in graph.modules if not _is_mjcf(m) and m != "jaxmj"]
  reached = {(m, t) for m in runtime for t in graph.top[m] if _is_mjcf(t)}
  reached |= {(m, t) for m, t in graph.inner if m in runtime and _is_mjcf(t)
              and (m, t) not in INNER_IMPORTS}
  assert reached == set()


def test_compiler_reaches_only_core_and_listed_runtime_modules(graph):
  core = set(LAYERS[0][1])
  out = {t for m, targets in graph.top.items() if _is_mjcf(m) for t in targets
         if not _is_mjcf(t) and t not in core}
  out |= {t for m, t in graph.inner if _is_mjcf(m) and not _is_mjcf(t)}
  assert out <= set(MJCF_REACHES), sorted(out - set(MJCF_REACHES))


def test_imports_inside_functions_are_the_documented_exceptions(graph):
  assert graph.inner == set(INNER_IMPORTS)


def test_no_private_name_crosses_modules(graph):
  assert sorted(graph.private) == []


def test_runtime_subpackages_export_nothing(graph):
  """A runtime subpackage's __init__ holds its docstring only, so that importing one of its
  modules runs no other (Python runs the package's __init__ first)."""
  packages = [m for m in graph.modules if m not in ("jaxmj", "jaxmj.envs") and not _is_mjcf(m)
              and os.path.basename(_path(m)) == "__init__.py"]  # jaxmj.envs: a public API
  assert {p: graph.top[p] for p in packages if graph.top[p]} == {}


def _path(mod: str) -> str:
  rel = mod.replace(".", os.sep)
  init = os.path.join(ROOT, rel, "__init__.py")
  return init if os.path.exists(init) else os.path.join(ROOT, rel + ".py")


def test_runtime_imports_without_lxml():
  code = ("import sys, jaxmj.smooth.kinematics, jaxmj.dynamics.forward, jaxmj\n"
          "print(sorted(m for m in sys.modules if m == 'lxml' or m.startswith('jaxmj.mjcf.')))")
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=ROOT, check=True).stdout
  assert out.strip() == "['jaxmj.mjcf.errors']"


def test_test_files_have_unique_names():
  """The test folders are not packages, so pytest imports each test file by its base name:
  two files of one name in different folders fail collection ("import file mismatch")."""
  import collections

  names = collections.Counter(
    f for _, _, files in os.walk(os.path.join(ROOT, "tests")) for f in files
    if f.startswith("test_") and f.endswith(".py"))
  assert not [n for n, k in names.items() if k > 1]
