"""The plain-Triton attention lesson 36 is judged against (measure.plain_triton.attention), run by Triton's own
interpreter on the CPU (TRITON_INTERPRET=1, in a child process: the variable must be set before Triton is imported),
in fp32 (numpy has no bf16), against softmax(Q·Kᵀ/√D)·V in fp64 on odd shapes, causal and not, Sq ≠ Sk both ways."""
import os
import subprocess
import sys

from gluon_course.course import repo_root

CHILD = r'''
import math, torch, triton
from gluon_course.measure import plain_triton as pt
torch.manual_seed(0)
kernel = pt.tl_attention_kernel.fn                   # the kernel itself: the autotuner needs a GPU to time
worst = 0.0
for B, H, Sq, Sk, causal, bm, bn in ((1, 2, 17, 17, False, 64, 32), (1, 2, 17, 17, True, 64, 32),
                                     (1, 1, 100, 300, True, 64, 32), (1, 1, 150, 70, True, 64, 64),
                                     (1, 1, 1, 1, False, 64, 64), (2, 1, 130, 130, True, 128, 64)):
    D = 64
    q, k, v = (torch.randn(B, H, S, D) for S in (Sq, Sk, Sk))
    o = torch.full_like(q, float("nan"))
    kernel[(triton.cdiv(Sq, bm), B * H)](q, k, v, o, Sq, Sk, 1.4426950408889634 / D ** 0.5, Sq * D, D, Sk * D, D,
                                         Sk * D, D, Sq * D, D, HEAD_DIM=D, CAUSAL=causal, BLOCK_M=bm, BLOCK_N=bn)
    s = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(D)
    if causal:
        s = s.masked_fill(~torch.ones(Sq, Sk, dtype=torch.bool).tril(), float("-inf"))
    ref = torch.softmax(s, -1) @ v.double()
    assert not torch.isnan(o).any(), (B, H, Sq, Sk, causal)
    worst = max(worst, float((o.double() - ref).abs().max()))
print(worst)
'''


def test_plain_triton_attention_in_the_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    run = subprocess.run([sys.executable, "-c", CHILD], cwd=repo_root(), env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert float(run.stdout.strip().splitlines()[-1]) < 1e-5
