"""scripts/gpu_trace.py's report, read offline from a folder a GPU run wrote: each device
kernel charged to the named scope of the instruction it runs, and the bandwidth it reached."""
# ruff: noqa: E501  (the HLO text below is XLA's, one instruction a line)

import gzip
import json
import os
import subprocess
import sys

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import gpu_trace  # noqa: E402

HLO = """HloModule jit_step

%fused_add (param_0: f32[8192,27,6], param_1: f32[8192,27]) -> f32[8192,27,6] {
  %param_0 = f32[8192,27,6]{2,1,0} parameter(0)
  %param_1 = f32[8192,27]{1,0} parameter(1)
  ROOT %add.1 = f32[8192,27,6]{2,1,0} add(%param_0, %param_0)
}

%fused_cat (param_0.1: f32[8192,6]) -> (f32[8192,6], u32[8192,6]) {
  %param_0.1 = f32[8192,6]{1,0} parameter(0)
  ROOT %tuple = (f32[8192,6]{1,0}, u32[8192,6]{1,0}) tuple(%param_0.1, %param_0.1)
}

ENTRY %main (p: f32[8192,27,6], q: f32[8192,27], r: f32[8192,6]) -> f32[8192,27,6] {
  %loop_add_fusion.1 = f32[8192,27,6]{2,1,0} fusion(%p, %q), kind=kLoop, calls=%fused_add, metadata={op_name="jit(step)/vmap(mj_fwdVelocity)/mj_rne/add"}
  %loop_concatenate_fusion = (f32[8192,6]{1,0}, u32[8192,6]{1,0}) fusion(%r), kind=kLoop, calls=%fused_cat, metadata={op_name="jit(step)/vmap(mj_fwdConstraint)/mj_solve/hessian_solve/concatenate"}
}
"""


def _write_run(folder, events, calls):
  os.makedirs(folder)
  with open(os.path.join(folder, "step.hlo.txt"), "w") as f:
    f.write(HLO)
  meta = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
          {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/host:CPU"}}]
  with gzip.open(os.path.join(folder, "trace.json.gz"), "wt") as f:
    json.dump({"traceEvents": meta + events}, f)
  with open(os.path.join(folder, "meta.json"), "w") as f:
    json.dump({"trace_calls": calls}, f)


def test_report_charges_kernels_to_scopes_with_their_bandwidth(tmp_path):
  folder = str(tmp_path / "jaxmj")
  events = [{"ph": "X", "pid": 1, "name": "loop_add_fusion_1", "dur": 10.0},
            {"ph": "X", "pid": 1, "name": "loop_add_fusion_1", "dur": 10.0},
            {"ph": "X", "pid": 1, "name": "loop_concatenate_fusion", "dur": 4.0},
            {"ph": "X", "pid": 1, "name": "sm90_gemm_kernel", "dur": 6.0},
            {"ph": "X", "pid": 2, "name": "PjitFunction(jit(step))", "dur": 999.0}]
  _write_run(folder, events, calls=2)
  lines = gpu_trace.report(folder, calls=2, top=5)
  assert lines[0] == "kernels: 2 runs and 15 us per call"  # the host's event left out
  scopes = {line.split(" x  ")[1]: float(line.split()[0]) for line in lines[2:5]}
  assert scopes == {"mj_rne": 10.0, "mj_solve/hessian_solve": 2.0, "(library)": 3.0}
  # loop_add_fusion.1 reads (8192, 27, 6) and (8192, 27) floats and writes (8192, 27, 6):
  # 11,501,568 bytes in 10 us a call, 1,150 GB/s
  rne = next(line for line in lines if line.endswith("loop_add_fusion_1"))
  assert rne.split()[4] == "1150"
  # a tuple of outputs counts each (196,608 bytes read, 393,216 written), in one run of 4 us
  # every other call: 147 GB/s
  cat = next(line for line in lines if line.endswith("loop_concatenate_fusion"))
  assert cat.split()[4] == "147"
  gemm = next(line for line in lines if line.endswith("sm90_gemm_kernel"))
  assert gemm.split()[4] == "-"


def test_compare_puts_runs_side_by_side_by_scope(tmp_path):
  one, two = str(tmp_path / "jaxmj"), str(tmp_path / "bar")
  _write_run(one, [{"ph": "X", "pid": 1, "name": "loop_add_fusion_1", "dur": 10.0},
                   {"ph": "X", "pid": 1, "name": "loop_concatenate_fusion", "dur": 4.0}], calls=1)
  _write_run(two, [{"ph": "X", "pid": 1, "name": "loop_add_fusion_1", "dur": 3.0}], calls=1)
  lines = gpu_trace.compare([one, two])
  assert lines[0].split()[-2:] == ["jaxmj", "bar"]
  assert lines[1].split()[-2:] == ["14.0", "3.0"]  # all kernels
  rows = {line[:30].strip(): line[30:].split() for line in lines[3:]}
  assert rows == {"mj_rne": ["10.0", "3.0"], "mj_solve/hessian_solve": ["4.0", "0.0"]}


def test_export_base_names_each_revision_its_own_package(tmp_path):
  """`--export-base REF --name NAME` adds package jaxmj_NAME beside the others, every jaxmj
  import renamed, so that one GPU call traces several revisions as engines NAME."""
  script = os.path.join(ROOT, "scripts", "gpu_trace.py")
  for name in ("one", "two"):
    subprocess.run([sys.executable, script, "--export-base", "HEAD", "--name", name,
                    "--base-path", str(tmp_path)], check=True, capture_output=True)
  assert sorted(os.listdir(tmp_path)) == ["jaxmj_one", "jaxmj_two"]
  with open(tmp_path / "jaxmj_two" / "smooth" / "com.py") as f:
    text = f.read()
  assert "from jaxmj_two import" in text and "from jaxmj import" not in text
