"""Test configuration: float64 everywhere (comparisons with MuJoCo), --runslow for slow tests."""

import os
import sys

import jaxlib  # noqa: E402


def _fast_compile_flags() -> str:
  """XLA flags that make the suite's compiles cheap (compiling dominates its time).

  XLA's LLVM optimizations (level 2, the default) are a third of each compile and buy run
  time that these single steps and short rollouts do not need. On jaxlib 0.10 the CPU fusion
  emitters take most of the rest: without them the pipeline's compile is ~3x faster (and
  runs no slower, measured on models/box_pile.xml's forward). Codegen in one LLVM module
  instead of one per thread: each xdist worker has a core, and splitting cost 7-12% of a
  compile's CPU time (step and step gradient of humanoid_floor and box_pile, three rounds
  each, 2026-12-07; the same results). XLA aborts on a flag it does not know, so those two
  are set only on the jaxlib minor version they were measured on.
  """
  flags = " --xla_backend_optimization_level=0"
  if jaxlib.__version__.split(".")[:2] == ["0", "10"]:
    flags += " --xla_cpu_use_fusion_emitters=false --xla_cpu_parallel_codegen_split_count=1"
  return flags


# Set before jax starts its CPU client, so it holds in every xdist worker;
# JAXMJ_TEST_XLA_OPT=1 keeps XLA's defaults (results agree to round-off either way).
if not os.environ.get("JAXMJ_TEST_XLA_OPT"):
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + _fast_compile_flags()).strip()

# MuJoCo picks its OpenGL backend once, at import: a headless one for the rendering tests,
# which skip where none works. Only one whose library is installed: naming a missing one
# makes `import mujoco` fail (jaxmj.rendering.headless_gl; jaxmj is imported after x64 is on).
if "MUJOCO_GL" not in os.environ and not os.environ.get("DISPLAY"):
  import ctypes.util  # noqa: E402

  for _gl, _lib in (("egl", "EGL"), ("osmesa", "OSMesa")):
    if sys.platform.startswith("linux") and ctypes.util.find_library(_lib):
      os.environ["MUJOCO_GL"] = _gl
      break

import gc  # noqa: E402

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_enable_x64", True)

from jaxmj.tracing_gc import THRESHOLDS  # noqa: E402

# The suite is mostly tracing, and at CPython's default collector thresholds 8% of each
# worker's CPU time went to collections (tests/dynamics, 2 workers: 25 and 18 s of 283 and
# 267 s; 3.2 and 2.4 s of 246 and 236 with these, 4:50 -> 4:11 wall). jaxmj's public
# functions relax them while they run (jaxmj/tracing_gc.py); the tests' own jits, gradients
# and lowerings need it process-wide. Each module's end collects once (below).
gc.set_threshold(*THRESHOLDS)
sys.path.insert(0, os.path.dirname(__file__))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")


def _persistent_compilation_cache() -> None:
  """With JAXMJ_TEST_XLA_CACHE=1: XLA's persistent compilation cache for the suite, in
  .pytest_cache/jax-xla (2 GiB cap), for reruns on a developer's machine.

  A rerun then skips most compiles (test_cli + test_step: 54 -> 35 s of CPU warm), and a
  cold run saves the programs several tests compile (four step/contact/noslip/forward files:
  356 -> 333 s). Off by default: in a fresh-clone run of the whole suite on 2 cores it made
  the run slower, 16:23 -> 22:59 (system time 1 -> 3 min): the size cap, which turns on
  JAX's file lock that xdist workers sharing the folder need, also rescans the folder under
  the lock at every write. Entries are keyed by the program, the compile options and
  XLA_FLAGS, so a changed engine never reads a stale one. Needs the `filelock` package.
  """
  if os.environ.get("JAXMJ_TEST_XLA_CACHE") != "1":
    return
  directory = os.path.join(ROOT, ".pytest_cache", "jax-xla")
  # `jaxmj simulate` called in-process points the cache at $JAXMJ_CACHE_DIR: the same folder,
  # not the user's ~/.cache/jaxmj (and a worker's cache is not redirected mid-run)
  os.environ["JAXMJ_CACHE_DIR"] = directory
  jax.config.update("jax_compilation_cache_dir", directory)
  jax.config.update("jax_compilation_cache_max_size", 2 << 30)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def _private_cli_cache() -> None:
  """Points `jaxmj simulate`'s default persistent cache ($JAXMJ_CACHE_DIR) at a folder of this
  process's own, removed at exit. test_cli runs the CLI in-process, which turns XLA's
  persistent cache on in that folder for the rest of the worker: at the default,
  ~/.cache/jaxmj/xla, the suite filled the user's cache with its programs and read back those
  of earlier runs (111 s of compiles saved in one run on a machine that had run it before),
  so its time there was not a fresh machine's."""
  if "JAXMJ_CACHE_DIR" in os.environ:
    return
  import atexit
  import shutil
  import tempfile

  directory = tempfile.mkdtemp(prefix="jaxmj-test-xla-")
  atexit.register(shutil.rmtree, directory, True)
  os.environ["JAXMJ_CACHE_DIR"] = directory


_persistent_compilation_cache()
_private_cli_cache()


def pytest_addoption(parser):
  parser.addoption("--runslow", action="store_true", help="run tests marked slow")


# Moved to --runslow to bring the default suite back towards 15 minutes on 2 cores (it had
# grown to 22): each took 8-58 s of process CPU time in a whole-suite run (2026-11-29; the
# last four 15-44 s in ci63's, 2026-12-01, when the suite had crept back to 15-19 minutes;
# the last eight 8-40 s of worker time in a 22-minute run, 2026-12-06; the last 11 s alone,
# 2026-12-07, its "scene" sibling has a free box in contact, actuators and sensors, and the
# gap row's condim-1 case, 7 s, beside its elliptic sibling that also pushes; adhesion under
# a cap, 26 s of a 30-minute run under load, 2026-12-07, beside its case with a gap layer),
# and the default suite keeps a cheaper test of the same behaviour (another parameter, model
# or test of the file). Node ids, parameters included; a stale id here only stops applying.
# Not here: a test whose compiled programs a default sibling shares (a module fixture or
# jitted function of its file: test_forward's seeds, test_convex's and test_hfield's shared
# results), which costs milliseconds after it (measured 2026-12-02).
SLOW_BY_MEASUREMENT = frozenset("""
tests/collision/test_hfield.py::test_heightfield_pairs_match_mj_collision
tests/envs/test_train.py::test_ppo_run_saves_a_policy_a_fresh_process_reads_back_bit_identically
tests/test_grad_families.py::test_rollout_gradient_of_every_constraint_family[pyramidal-3]
tests/test_grad_families.py::test_gradient_finite_when_exactly_touching
tests/test_checkpoint.py::test_checkpointed_rollout_has_the_plain_values_and_gradient
tests/test_fuzz_scenes.py::test_box_on_damped_hinge_under_two_cg_iterations_matches_mujoco
tests/envs/test_pixels.py::test_camera_observation_prepends_the_cameras_pixels_to_obs
tests/dynamics/test_forward.py::test_forward_matches_mj_forward[curved_drop.xml-0]
tests/dynamics/test_forward.py::test_forward_matches_mj_forward[sensors.xml-0]
tests/dynamics/test_forward.py::test_fwd_acceleration_matches_mj_fwdacceleration[curved_drop.xml]
tests/dynamics/test_batch_grad.py::test_rollout_gradient_at_rest_and_identity_quaternions[arm]
tests/dynamics/test_batch_grad.py::test_rollout_gradient_matches_finite_differences[double_pendulum]
tests/actuation/test_actuation.py::test_rollout_gradient_wrt_ctrl_and_gainprm_matches_finite_differences
tests/collision/test_convex_float32.py::test_float32_finds_resting_contacts_on_a_box
tests/dynamics/test_contact_grad.py::test_sliding_box_gradient_matches_finite_differences_short
tests/envs/test_gym.py::test_vector_env_resets_finished_worlds_in_the_same_step
tests/envs/test_envs.py::test_wrapped_env_restarts_every_finished_world_from_a_new_random_start[jaxmj-50]
tests/camera/test_soft.py::test_soft_silhouettes_carry_gradients_across_edges
tests/camera/test_grad.py::test_depth_and_shading_gradients_match_finite_differences[triangles]
tests/test_derivative.py::test_transition_jacobians_batch_chunk_and_finite_difference_options
tests/test_math.py::test_quaternion_rules_match_finite_differences[False]
tests/solver/test_island.py::test_per_island_gradient_matches_finite_differences
tests/solver/test_island.py::test_pgs_few_iterations_matches_mj_step[pyramidal-3-100]
tests/solver/test_noslip.py::test_unrolled_noslip_gradient_matches_finite_differences[elliptic]
tests/solver/test_noslip.py::test_noslip_sweeps_match_mujoco[30-elliptic]
tests/solver/test_noslip.py::test_noslip_sweeps_match_mujoco[2-elliptic]
tests/dynamics/test_arithmetic.py::test_forward_stages_match_mujoco_within_stated_tolerances[humanoid_floor]
tests/dynamics/test_arithmetic.py::test_trajectories_match_mujoco_within_stated_tolerance[humanoid]
tests/smooth/test_plastic.py::test_trajectory_past_yield_matches_mj_step[RK4]
tests/dynamics/test_forward.py::test_forward_matches_mj_forward[curved_drop.xml-1]
tests/dynamics/test_forward.py::test_forward_matches_mj_forward[sensors.xml-1]
tests/smooth/test_kinematics_tangent.py::test_qpos_tangent_matches_the_composition_and_central_differences[chain12]
tests/test_checkpoint.py::test_rollout_gradient_keeps_while_loop_results_instead_of_rerunning_them[colliders]
tests/solver/test_noslip.py::test_noslip_sweeps_match_mujoco[1-elliptic]
tests/solver/test_noslip.py::test_noslip_sweeps_match_mujoco[3-pyramidal]
tests/collision/test_world_fixed.py::test_gradients_match_finite_differences
tests/solver/test_implicit.py::test_contact_free_gradient_matches_finite_differences
tests/smooth/test_mass_tangent.py::test_solve_m_tree_jvp_in_positions_matches_central_differences_and_grad
tests/dynamics/test_batch_grad.py::test_rollout_gradient_from_zero_velocity_under_gravity
tests/test_grad_kernels_script.py::test_counts_a_contact_rollouts_forward_and_transposed_kernels_by_stage
tests/test_loops.py::test_epa_first_pass_resumes_to_the_full_loops_result
tests/solver/test_implicit.py::test_batch_gradient_is_each_worlds_own
tests/collision/test_contact_cap.py::test_cap_batches_and_differentiates
tests/dynamics/test_integrator.py::test_damping_set_at_run_time_acts_on_a_model_compiled_without_it[]
tests/solver/test_tree_blocks.py::test_forward_matches_mujoco_with_and_without_coupling[False-elliptic-3]
tests/solver/test_tree_blocks.py::test_forward_matches_mujoco_with_and_without_coupling[True-elliptic-3]
tests/test_derivative.py::test_transition_jacobians_match_mjd_transitionFD[arm_undamped]
tests/dynamics/test_inverse_jacobians.py::test_inverse_jacobians_match_mjd_inverseFD[box_stack]
tests/constraint/test_adhesion.py::test_adhering_contacts_in_the_gap_layer_get_one_frictionless_row[pyramidal-1--3.0]
tests/collision/test_contact_cap.py::test_contact_adhesion_under_a_cap_matches_mujoco[adhesion]
""".split())


# Modules of one long test each (fresh processes, notebooks: 20-64 s), run first: in
# collection order the notebooks came last, and xdist's last long test ran while the other
# worker, its queue empty, waited. Whole modules move, so their fixtures still set up once.
LONG_FIRST = ("tests/test_determinism.py", "tests/test_readme.py",
              "tests/test_trajopt_notebook.py", "tests/test_sysid_notebook.py",
              "tests/test_getting_started_notebook.py")


def pytest_collection_modifyitems(config, items):
  items.sort(key=lambda item: item.nodeid.split("::")[0] not in LONG_FIRST)
  for item in items:
    if item.nodeid in SLOW_BY_MEASUREMENT:
      item.add_marker(pytest.mark.slow)
  if config.getoption("--runslow"):
    return
  skip = pytest.mark.skip(reason="slow: run with --runslow")
  for item in items:
    if "slow" in item.keywords:
      item.add_marker(skip)


@pytest.fixture(scope="module", autouse=True)
def _free_compiled_programs():
  """Drops jax's compiled programs after each test module, and the cycles the relaxed
  collector left: a worker runs hundreds of modules, and keeping every executable alive
  grows its memory without bound."""
  yield
  jax.clear_caches()
  gc.collect()


@pytest.fixture
def patch_traced():
  """patch(module, name, value): sets a module constant that shapes traces (as
  monkeypatch.setattr), with jax's caches cleared before the test goes on and after the
  value is restored: jaxmj's public functions are jits, whose cached traces would neither see
  the patch nor, in a later test, its undoing."""
  undo = []

  def patch(module, name, value):
    undo.append((module, name, getattr(module, name)))
    setattr(module, name, value)
    jax.clear_caches()

  yield patch
  for module, name, value in reversed(undo):
    setattr(module, name, value)
  if undo:
    jax.clear_caches()


_CACHE_OPTIONS = ("jax_enable_compilation_cache", "jax_compilation_cache_dir",
                  "jax_compilation_cache_max_size", "jax_persistent_cache_min_compile_time_secs",
                  "jax_persistent_cache_min_entry_size_bytes")


@pytest.fixture
def cli_cache_restored():
  """For tests that run a `jaxmj` command in-process: XLA's persistent cache settings (which
  the command turns on, bounded) as they were before the test. Left on, the rest of the
  worker's compiles would each be written to that folder and, under its size cap, rescan it
  under JAX's file lock."""
  from jax.experimental.compilation_cache import compilation_cache

  before = {k: getattr(jax.config, k) for k in _CACHE_OPTIONS}
  yield
  for k, v in before.items():
    jax.config.update(k, v)
  compilation_cache.reset_cache()


@pytest.fixture
def fast_jit():
  """jax.jit with the cheapest XLA compile (mujoco_compare.FAST), for a test's own jit."""
  from mujoco_compare import jit_fast

  return jit_fast


@pytest.fixture(scope="module")
def gl():
  """Skips where MuJoCo has no working OpenGL backend (MUJOCO_GL, set above)."""
  import mujoco

  m = mujoco.MjModel.from_xml_string("<mujoco/>")
  try:
    with mujoco.Renderer(m, 8, 8):
      pass
  except Exception as e:
    pytest.skip(f"no OpenGL backend for mujoco.Renderer (MUJOCO_GL="
                f"{os.environ.get('MUJOCO_GL')}): {e}")
