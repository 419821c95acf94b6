#!/bin/bash
# The GPU benchmark as run on a lent GPU machine (see README, "Speed"): the suite (jaxmj beside
# MJX), and jaxmj at revision BASE (a checkout whose root is $1, default: none) on MJX's humanoid
# beside it, sharing one device lock so that timed calls never overlap; then float32
# trajectories on the GPU held to MuJoCo C (scripts/gpu_fidelity.py). Results go to $OUT.
# Usage: scripts/gpu_suite.sh [BASE_ROOT]
OUT=${OUT:-.}
export PYTHONUNBUFFERED=1 BENCH_DEVICE_LOCK=/tmp/bench_device.lock XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
python3 -c "import jax; print(jax.__version__, jax.devices())"
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "$1" ]; then
  h=$(python3 -c "import bench; print(bench._mjx_test_model('humanoid/humanoid.xml'))" 2>/dev/null \
      || python3 -c "import sys; sys.path.insert(0, '$here/scripts'); import bench; print(bench._mjx_test_model('humanoid/humanoid.xml'))")
  (cd "$1" && PYTHONPATH="$1:$PYTHONPATH" python3 "$here/scripts/bench.py" "$h" --engines jaxmj \
     --batches 8192 --steps 100 --json "$OUT/bench_base.json" > "$OUT/bench_base.log" 2>&1) &
fi
python3 "$here/scripts/bench.py" --suite gpu --stall-timeout 240 --json "$OUT/bench_gpu.json" \
  2>&1 | grep -v -i warn | tee "$OUT/bench_gpu.log"
wait
grep -v -i warn "$OUT/bench_base.log" 2>/dev/null | tail -8
python3 "$here/scripts/gpu_fidelity.py" 2>&1 | grep -v -i warn | tee "$OUT/gpu_fidelity.log"
