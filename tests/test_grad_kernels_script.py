"""scripts/grad_kernels.py, the count of a rollout gradient's kernels by stage and pass."""

import os
import re
import subprocess
import sys

from conftest import ROOT

# one box resting on a plane: a contact's collision has a backward pass (box_stack's three
# boxes took 1.5x the time for the same checks)
BOX = """<mujoco model="one_box"><worldbody><geom type="plane" size="1 1 0.1"/>
<body pos="0 0 0.099"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
</worldbody></mujoco>"""


def test_counts_a_contact_rollouts_forward_and_transposed_kernels_by_stage(tmp_path):
  model = tmp_path / "one_box.xml"
  model.write_text(BOX)
  out = subprocess.run(
    [sys.executable, os.path.join(ROOT, "scripts", "grad_kernels.py"), "--model", str(model),
     "--nstep", "2", "--top", "3"], capture_output=True, text=True, check=True).stdout
  totals = re.search(r"forward rollout (\d+) kernels; gradient (\d+) \(forward pass (\d+), "
                     r"transposed (\d+)\)", out)
  assert totals, out
  fwd, grad, grad_fwd, grad_t = map(int, totals.groups())
  assert grad == grad_fwd + grad_t and grad > fwd > 0 and grad_t > 0
  listed = re.search(r"mj_collision transposed: (\d+) kernels", out)
  assert listed and int(listed.group(1)) > 0  # plane-box's backward
  assert "jaxmj/collision/" in out.split("mj_collision transposed")[1]
