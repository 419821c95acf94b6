#!/bin/bash
# Everything one lent GPU machine is for, inside one call of at most BUDGET seconds (default 570;
# a lease is 15 minutes of device time in all). PARTS (default "suite fidelity profile") names the
# parts, run in the order it gives: suite (jaxmj beside MJX, scripts/bench.py --suite gpu),
# fidelity (float32 trajectories on the GPU held to MuJoCo C, scripts/gpu_fidelity.py, with fast
# arithmetic at full float32 matrix products beside JAX's default TF32), autotune (MJX's humanoid
# in both engines again with XLA's GEMM autotuning off, --xla_gpu_autotune_level=0: is the batched
# rollout's compile, ~2x the step's on 2026-11-30, autotuning?), graphs (MJX's humanoid in both
# engines with XLA's command buffers (CUDA graphs) off, then on for every kind of thunk, loops and
# branches included: the GPU proxies rank engines by kernel launches, ~5.7 us each in the
# 2026-11-30 run (MJX's scan, 1.77 ms a step over 308), and a graph replays a step's launches
# without the host: does either engine change, and do launch counts still rank them?), spd (the
# Newton step's SPD solve alone, as jaxmj runs it off the CPU beside cuSOLVER's Cholesky and a
# one-kernel Pallas/Triton solve: should a GPU get the Pallas kernel? scripts/spd_candidates.py,
# ~30 s), profile (a per-stage profile of MJX's humanoid, scripts/profile_step.py, with what time
# is left), trace (a profiler trace of one step of MJX's humanoid per engine, jaxmj, MJX, jaxmj in
# fast arithmetic and jaxmj at each other revision gpu_base/ holds (`scripts/gpu_trace.py
# --export-base REF --name NAME` writes one): each kernel's time charged to jaxmj's stages, trace
# and HLO packed into $OUT/trace.tgz for reading offline (the device tool brings back 8 files),
# ~45 s an engine), grad (issue 19's cost of reverse mode on the device: a 50-step rollout's
# gradient over its forward in wall time, humanoid_floor falling and box_stack, one world,
# scripts/bench_grad_memory.py --ratio-only; 2-4 min a model on the 2-core CPU, mostly
# compiling). Each part gets a deadline so a slow part cannot take the rest's results; bench.py prints every row as it ends. A second call on the
# still-warm machine can run the parts the first left out: PARTS="autotune profile" BUDGET=240
# bash scripts/gpu_suite.sh (or "graphs autotune", "spd graphs")
# Results go to $OUT (the device tool's folder that comes back).
# BATCH and STEPS shrink it for a rehearsal on the CPU: BATCH=4 STEPS=2 OUT=/tmp/g bash scripts/gpu_suite.sh
# On the lent machine (Python 3.12, JAX with CUDA, no network), mujoco-core, mujoco-mjx and trimesh
# travel as wheels (README, "On a GPU").
OUT=${OUT:-.}; mkdir -p "$OUT"
B=${BATCH:-8192}; T=${STEPS:-100}
export PYTHONUNBUFFERED=1 BENCH_DEVICE_LOCK=/tmp/bench_device.lock XLA_PYTHON_CLIENT_PREALLOCATE=false
here=$(cd "$(dirname "$0")/.." && pwd)
t0=$(date +%s); end=$(( t0 + ${BUDGET:-570} ))
el() { echo "[t+$(( $(date +%s) - t0 ))s] $*"; }
left() { echo $(( end - $(date +%s) - $1 )); }  # seconds to the deadline, less a reserve
quiet() { grep --line-buffered -v -i warn; }     # line-buffered: a killed part keeps its lines
nvidia-smi -L 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>/dev/null
python3 -c "import jax, mujoco, jaxmj; print('jax', jax.__version__, jax.devices(), 'mujoco', mujoco.__version__)" || exit 1
H=$(python3 -c "import sys; sys.path.insert(0, '$here/scripts'); import bench; print(bench._mjx_test_model('humanoid/humanoid.xml'))")
PARTS=" ${PARTS:-suite fidelity profile} "
part_suite() {
  el suite
  local reserve=170; [ "$p" = "$last" ] && reserve=5  # the reserve is for the parts after it
  timeout "$(left $reserve)" python3 "$here/scripts/bench.py" --suite gpu --batches "$B" --steps "$T" \
    --stall-timeout 200 --json "$OUT/bench_gpu.json" --markdown "$OUT/bench_gpu.md" 2>&1 | quiet | tee "$OUT/bench_gpu.log"
}
part_fidelity() {
  el fidelity
  timeout "$(( $(left 0) / 2 ))" python3 "$here/scripts/gpu_fidelity.py" \
    --engines jaxmj jaxmj-fast jaxmj-fast-hi mjx 2>&1 | quiet | tee "$OUT/gpu_fidelity.log"
}
part_autotune() {
  el autotune
  XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_gpu_autotune_level=0" timeout "$(left 60)" \
    python3 "$here/scripts/bench.py" "$H" --batches "$B" --steps "$T" --engines jaxmj mjx \
    --stall-timeout 200 --json "$OUT/bench_autotune0.json" 2>&1 | quiet | tee "$OUT/bench_autotune0.log"
}
part_graphs() {
  share=2  # the first of the two runs gets half the time left, the second the rest
  for cb in "" "FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,WHILE,CONDITIONAL --xla_gpu_graph_min_graph_size=1"; do
    el "graphs: --xla_gpu_enable_command_buffer=$cb"
    tag=$([ -z "$cb" ] && echo off || echo all)
    XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_gpu_enable_command_buffer=$cb" timeout "$(( $(left 10) / share ))" \
      python3 "$here/scripts/bench.py" "$H" --batches "$B" --steps "$T" --engines jaxmj mjx \
      --stall-timeout 200 --json "$OUT/bench_graphs_$tag.json" 2>&1 | quiet | tee "$OUT/bench_graphs_$tag.log"
    share=1
  done
}
part_spd() {
  el spd
  timeout "$(left 20)" python3 "$here/scripts/spd_candidates.py" --batch "$B" --n 27 48 \
    2>&1 | quiet | tee "$OUT/spd_candidates.log"
}
part_trace() {
  el trace
  local bases; bases=$(cd "$here/gpu_base" 2>/dev/null && ls -d jaxmj_* 2>/dev/null | sed 's/^jaxmj_//')
  timeout "$(left 3)" python3 "$here/scripts/gpu_trace.py" "$H" --batch "$B" \
    --engines jaxmj mjx $bases jaxmj-fast --base-path "$here/gpu_base" --out "$OUT/trace" \
    2>&1 | quiet | tee "$OUT/trace.log"
  tar -czf "$OUT/trace.tgz" -C "$OUT" trace && rm -rf "$OUT/trace"
}
part_grad() {
  for model in humanoid_floor box_stack; do
    el "grad: $model"
    timeout "$(left 3)" python3 "$here/scripts/bench_grad_memory.py" --model "$model" --ratio-only \
      --repeats 5 --calls 5 2>&1 | quiet | tee -a "$OUT/grad_ratio.log"
  done
}
part_profile() {
  el profile
  timeout "$(left 3)" python3 "$here/scripts/profile_step.py" "$H" --batch "$B" --repeats 3 --calls 3 \
    --engines jaxmj mjx --stages collision constraint solver step 2>&1 | quiet | tee "$OUT/profile_humanoid.log"
}
for p in $PARTS; do declare -F "part_$p" > /dev/null || { echo "unknown part: $p"; exit 2; }; done
last=$(echo $PARTS | awk '{print $NF}')
for p in $PARTS; do "part_$p"; done
el done
