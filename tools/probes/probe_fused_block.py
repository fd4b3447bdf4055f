"""Issue 41's GPU questions about lesson 35's kernels (solutions/35-fused-block), beyond the lesson's own figures:

1. each GEMM of the 8B-class block (QKV, o with the residual, gate and up with SwiGLU, down with the residual) at
   M = 1, 16 and 2048: fused (the lesson's fused_linear), unfused (lesson 32's linear, then torch's elementwise work)
   and torch (F.linear, then the same), each in a CUDA graph of 20 calls, each call on its own copy of W (enough
   copies to exceed twice the L2, so that W comes from HBM as in a model's layer), the three replayed in turn;
2. the decode chain of the four GEMMs in a CUDA graph at 1 and 16 tokens: fused with PDL, fused without, and
   unfused, the same weights and input; whether PDL changes the output (it must not).

Correctness first (the lesson's own check on odd shapes and the block's, ``gluon_course.nvidia.fused``); the run ends
itself after 540 s.

    python tools/probes/probe_fused_block.py --model     CPU: lesson 35's host-model checks on its solution
    python tools/probes/probe_fused_block.py --compile   CPU: lesson 35's sm_90 checks (resources, PDL)
    python tools/probes/probe_fused_block.py --chain-model      CPU: the decode chain in the host model (slow: minutes)
    python tools/probes/probe_fused_block.py --sanitize-chain   GPU: the decode chain under compute-sanitizer memcheck
    python tools/probes/probe_fused_block.py --triage-chain     GPU: each chain in its own process, which one faults
    python tools/probes/probe_fused_block.py OUT.json    GPU: the steps above; a JSON and a table

Until commit 5ae7622 this probe held its own copy of the kernel, reaching griddepcontrol through gl.inline_asm; lesson
35 now holds the kernel (with Triton's gdc_wait and gdc_launch_dependents), and the probe times it.
"""
from __future__ import annotations

import json
import sys
import time

import torch
import triton

from gluon_course import load_checks, load_solution
from gluon_course.measure.timing import replayed_in_turn
from gluon_course.nvidia import fused

LESSON = load_solution("35")
V32 = load_solution("32")
TIMED_M = (1, 16, 2048)
WATCHDOG_S = 540                    # the whole run ends by then, whatever hangs


def _graph_of(fn, calls: int):
    """A CUDA graph of ``calls`` calls of ``fn(i)`` (i the call's index), after a warm-up outside it."""
    for i in range(2):
        fn(i)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s):
        with torch.cuda.graph(g, stream=s):
            for i in range(calls):
                fn(i)
    torch.cuda.synchronize()
    return g


def _after(epilogue: str, N: int, r):
    """torch's elementwise work after an unfused GEMM's output."""
    F = torch.nn.functional
    if epilogue == "swiglu":
        return lambda full: F.silu(full[:, :N]) * full[:, N:]
    return (lambda full: full + r) if epilogue == "residual" else (lambda full: full)


def time_gemm(name: str, N: int, K: int, epilogue: str, M: int, calls: int = 20) -> dict:
    """Fused, unfused and torch for one GEMM of the block at M (see the module's docstring)."""
    w_rows = N * (2 if epilogue == "swiglu" else 1)
    w_bytes = w_rows * K * 2
    copies = max(2, -(-(200 << 20) // w_bytes))
    a, _, _, r = fused.gpu_operands(M, N, K, epilogue, 1)
    ws = [torch.randn(w_rows, K, device="cuda", dtype=torch.bfloat16) / K ** 0.5 for _ in range(copies)]
    cats = [LESSON.interleave_gate_up(w[:N], w[N:]) for w in ws] if epilogue == "swiglu" else ws
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    wide = torch.empty(M, w_rows, device="cuda", dtype=torch.bfloat16)
    after = _after(epilogue, N, r)
    f = LESSON.FusedLinear(epilogue)
    graphs = {"fused": _graph_of(lambda i: f(a, cats[i % copies], c, r), calls),
              "unfused": _graph_of(lambda i: after(V32.linear(a, ws[i % copies].t(), wide)), calls),
              "torch": _graph_of(lambda i: after(torch.nn.functional.linear(a, ws[i % copies])), calls)}
    us = replayed_in_turn(graphs, calls)
    moved = w_bytes + M * K * 2 + M * N * 2 * (2 if epilogue == "residual" else 1)
    return {"gemm": name, "M": M, "N": N, "K": K, "epilogue": epilogue,
            "config": LESSON.config_for(M, epilogue, N, K), "w_copies": copies, "us": us, "bytes": moved,
            "fused_GBps": moved / us["fused"] / 1e3}


def decode_chain(M: int, pdl: bool, unfused: bool = False, device: str = "cuda"):
    """The block's four GEMMs at M tokens: QKV; o with the residual x (attention stood in for by Q's columns, read
    as they lie in QKV's output); gate and up with SwiGLU; down with the residual. Returns the step and its output;
    the step's ``calls`` are its four launches in order, each (name, call, C), and its ``tensors`` every tensor the
    launches touch, by name (the host model's run of the chain, ``chain_in_model``, reads both).
    ``unfused``: the same chain through lesson 32's linear and torch's elementwise work (the same weights and input:
    the generator's seed is fixed). ``device="cpu"``: the same tensors on the CPU, for the host model."""
    g = torch.Generator(device=device).manual_seed(3)
    x = torch.randn(M, fused.HIDDEN, device=device, dtype=torch.bfloat16, generator=g)
    W = {name: torch.randn(N * (2 if ep == "swiglu" else 1), K, device=device, dtype=torch.bfloat16,
                           generator=g) / K ** 0.5 for name, N, K, ep in fused.BLOCK_GEMMS}
    gate_up = W["gate_up"]
    w_cat = LESSON.interleave_gate_up(gate_up[:fused.FFN], gate_up[fused.FFN:])
    fs = {name: LESSON.FusedLinear(ep, pdl) for name, _, _, ep in fused.BLOCK_GEMMS}
    qkv = torch.empty(M, 6144, device=device, dtype=torch.bfloat16)
    h = torch.empty(M, fused.HIDDEN, device=device, dtype=torch.bfloat16)
    act = torch.empty(M, fused.FFN, device=device, dtype=torch.bfloat16)
    out = torch.empty(M, fused.HIDDEN, device=device, dtype=torch.bfloat16)
    calls = (("qkv", lambda: fs["qkv"](x, W["qkv"], qkv), qkv),
             ("o", lambda: fs["o"](qkv[:, :fused.HIDDEN], W["o"], h, x), h),
             ("gate_up", lambda: fs["gate_up"](h, w_cat, act), act),
             ("down", lambda: fs["down"](act, W["down"], out, h), out))

    def step(_=0):
        for _, call, _ in calls:
            call()

    def unfused_step(_=0):
        F = torch.nn.functional
        q = V32.linear(x, W["qkv"].t())[:, :fused.HIDDEN]
        h2 = V32.linear(q, W["o"].t()) + x
        gu = V32.linear(h2, gate_up.t())
        out.copy_(V32.linear(F.silu(gu[:, :fused.FFN]) * gu[:, fused.FFN:], W["down"].t()) + h2)
    step.calls = calls
    step.tensors = {"x": x, "w_cat": w_cat, "qkv": qkv, "h": h, "act": act, "out": out,
                    **{f"W_{name}": w for name, w in W.items()}}
    step.weights = dict(W, gate_up_rows=(gate_up[:fused.FFN], gate_up[fused.FFN:]))
    return (unfused_step if unfused else step), out


def chain_in_model(M: int, pdl: bool, steps: int = 2, sms: int = 132, order=None) -> str | None:
    """The decode chain exactly as ``decode_chain`` builds it (the same views, strides, weights and launchers), on
    the CPU with the GPU stood in for by the host model (``ModelGPU``, ``sms`` SMs), ``steps`` steps back to back:
    any address outside its buffer, any barrier or counter misuse is the model's error; then each launch's C written
    once an element, and its values against the unfused math in fp32 on the same bf16 inputs. None, or a sentence."""
    from gluon_course.model import ModelError, ModelUnsupported
    from gluon_course.model.launcher import ModelGPU

    F = torch.nn.functional
    step, _ = decode_chain(M, pdl, device="cpu")
    t, W = step.tensors, step.weights
    ins = {"qkv": lambda: t["x"].float() @ W["qkv"].float().t(),
           "o": lambda: t["qkv"][:, :fused.HIDDEN].float() @ W["o"].float().t() + t["x"].float(),
           "gate_up": lambda: (F.silu(t["h"].float() @ W["gate_up_rows"][0].float().t())
                               * (t["h"].float() @ W["gate_up_rows"][1].float().t())),
           "down": lambda: t["act"].float() @ W["down"].float().t() + t["h"].float()}
    with ModelGPU(sms, order=order) as gpu:
        for name, tensor in t.items():
            gpu.add(tensor, name)
        for s in range(steps):
            for name, call, c in step.calls:
                where = f"the decode chain at M={M}{' with PDL' if pdl else ''}, step {s + 1}, {name}"
                c.fill_(float("nan"))
                try:
                    call()
                except ModelUnsupported as e:
                    return f"{where}: not modelled: {e}"
                except ModelError as e:
                    return f"{where}: {type(e).__name__}: {e}"
                writes = gpu.writes(c)
                if (writes != 1).any():
                    return f"{where}: {int((writes != 1).sum())} element(s) of C not written exactly once"
                want = ins[name]()
                err = float((c.float() - want).abs().max() / want.abs().max())
                if not err <= 2 ** -7:
                    return f"{where}: off by {err:.3g} of C's largest element against the unfused math"
    return None


def chain_child(M: int, pdl: bool, graph: bool, steps: int = 3, unfused: bool = False) -> None:
    """One decode chain alone (fused, or ``unfused``), in a process of its own: ``steps`` steps eagerly, then
    (``graph``) captured in a CUDA graph of 10 steps and replayed twice, as gpu_main builds it; a synchronize after
    each launch of the eager steps, so that a fault names its GEMM."""
    step, out = decode_chain(M, pdl, unfused)
    what = f"chain M={M} {'unfused' if unfused else 'fused'}{' pdl' if pdl else ''}"
    for i in range(steps):
        for name, call, _ in getattr(step, "calls", (("the unfused step", step, None),)):
            print(f"{what}: eager step {i + 1}, {name}", flush=True)
            call()
            torch.cuda.synchronize()
    print(f"{what}: {steps} eager steps done", flush=True)
    if graph:
        g = _graph_of(step, 10)
        print(f"{what}: graph captured", flush=True)
        for _ in range(2):
            g.replay()
            torch.cuda.synchronize()
        print(f"{what}: graph replayed", flush=True)


def triage_chain(limit_s: int = 120, sanitize_s: int = 200) -> None:
    """Each chain (M = 1, 16; fused without and with PDL, unfused) in its own process, eagerly and then in a graph,
    without a sanitizer: which one faults, and where. Then the first that faulted again under compute-sanitizer
    memcheck (its first report)."""
    import subprocess

    failed = None
    for M in (1, 16):
        for pdl, unfused in ((False, False), (True, False), (False, True)):
            cmd = ["timeout", str(limit_s), sys.executable, __file__, "--chain-child", str(M), str(int(pdl)), "1",
                   str(int(unfused))]
            t0 = time.time()
            done = subprocess.run(cmd, capture_output=True, text=True)
            lines = (done.stdout + done.stderr).strip().splitlines()
            print(f"--- M={M} pdl={pdl} unfused={unfused}: exit {done.returncode} ({time.time() - t0:.0f} s)",
                  flush=True)
            print("\n".join(lines[-6:]), flush=True)
            if done.returncode and failed is None:
                failed = cmd[2:]
    if failed:
        cmd = ["timeout", str(sanitize_s), "compute-sanitizer", "--tool", "memcheck", "--print-limit", "2",
               "--error-exitcode", "9", *failed]
        done = subprocess.run(cmd, capture_output=True, text=True)
        text = (done.stdout + done.stderr).strip().splitlines()
        print(f"--- under memcheck: {' '.join(failed[1:])}: exit {done.returncode}", flush=True)
        print("\n".join([line for line in text if "=====" in line][:40] or text[-20:]), flush=True)


def sanitize_chain(limit_s: int = 240) -> None:
    """Each chain (M = 1, 16; without and with PDL; eager, then in a graph) in its own process under
    ``compute-sanitizer --tool memcheck``, with a time limit: its first report, or that it ran clean."""
    import subprocess

    for M in (1, 16):
        for pdl in (False, True):
            cmd = ["timeout", str(limit_s), "compute-sanitizer", "--tool", "memcheck", "--print-limit", "1",
                   "--error-exitcode", "9", sys.executable, __file__, "--chain-child", str(M), str(int(pdl)), "1"]
            done = subprocess.run(cmd, capture_output=True, text=True)
            text = (done.stdout + done.stderr).strip().splitlines()
            report = [line for line in text if "=========" in line][:12]
            print(f"--- M={M} pdl={pdl}: exit {done.returncode}", flush=True)
            print("\n".join(report or text[-12:]), flush=True)


def gpu_main(path: str) -> None:
    import faulthandler
    import subprocess
    from datetime import datetime, timezone

    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    t0 = time.time()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    found = {"what": "issue 41: lesson 35's fused GEMMs against unfused and torch on an 8B-class block's GEMMs, and "
                     "its decode chain in a CUDA graph with and without PDL",
             "produced_by": {"probe": "tools/probes/probe_fused_block.py",
                             "command": "python tools/probes/probe_fused_block.py OUT.json",
                             "established_from": "the run's own output (the probe writes this field)"},
             "gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
             "cuda": torch.version.cuda, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "commit": commit}

    def save():
        with open(path, "w") as fh:
            json.dump(found, fh, indent=1)

    problem = fused.correct(LESSON)
    found["correct"] = problem or "passed"
    save()
    if problem:
        print(f"correctness failed, no timing: {problem}", flush=True)
        return
    print(f"correct ({time.time() - t0:.0f} s)", flush=True)

    rows = []
    for M in TIMED_M:
        for name, N, K, epilogue in fused.BLOCK_GEMMS:
            try:
                row = time_gemm(name, N, K, epilogue, M)
            except Exception as e:                        # kept in the JSON; the other rows still run
                found.setdefault("errors", []).append(f"{name} M={M}: {type(e).__name__}: {e}")
                print(f"{name} M={M}: failed: {e}", flush=True)
                continue
            rows.append(row)
            found["gemms"] = rows
            save()

    chain = []
    for M in (1, 16):
        try:
            # A graph holds no reference to the tensors its kernels address: each chain's step (whose closures hold
            # them) is kept beside its graph, or the next chain's allocations take the first one's memory.
            graphs, outs, steps = {}, {}, {}
            for key, pdl, unfused in (("no_pdl", False, False), ("pdl", True, False), ("unfused", False, True)):
                steps[key], outs[key] = decode_chain(M, pdl, unfused)
                graphs[key] = _graph_of(steps[key], 10)
            us = replayed_in_turn(graphs, 10, rounds=21)
        except Exception as e:                            # e.g. stream capture refusing a PDL launch
            found.setdefault("errors", []).append(f"decode chain M={M}: {type(e).__name__}: {e}")
            print(f"decode chain M={M}: failed: {e}", flush=True)
            save()
            continue
        # The unfused chain rounds gate's and up's sums to bf16 before SiLU, where the fused one keeps them in fp32:
        # the two agree to bf16's rounding, not bit for bit.
        chain.append({"M": M, "us_per_step": us, "pdl_output_equal": bool(torch.equal(outs["no_pdl"], outs["pdl"])),
                      "unfused_max_abs_diff": float((outs["unfused"].float() - outs["pdl"].float()).abs().max())})
        found["decode_chain"] = chain
        save()
    found["seconds"] = round(time.time() - t0, 1)
    save()

    print("\n| GEMM | M | fused µs | unfused µs | torch µs | fused GB/s |\n|---|---|---|---|---|---|")
    for row in rows:
        u = row["us"]
        print(f"| {row['gemm']} | {row['M']} | {u['fused']:.1f} | {u['unfused']:.1f} | {u['torch']:.1f} | "
              f"{row['fused_GBps']:.0f} |")
    print("\n| decode chain (4 GEMMs) | M | PDL µs | no PDL µs | unfused µs | PDL's output equal |\n|---|---|---|---|---|---|")
    for c in chain:
        u = c["us_per_step"]
        print(f"| a step | {c['M']} | {u['pdl']:.1f} | {u['no_pdl']:.1f} | {u['unfused']:.1f} | {c['pdl_output_equal']} |")


def cpu_checks(keys) -> str | None:
    """Lesson 35's checks of those keys on its solution: None, or the first failure's sentence."""
    from gluon_course.grading.runner import run_check

    checks = load_checks("35").CHECKS
    for key in keys:
        outcome = run_check(checks.check(key), LESSON, "35")
        if outcome.failed:
            return f"{key}: {outcome.detail}"
    return None


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--chain-child"]:
        chain_child(int(args[1]), bool(int(args[2])), bool(int(args[3])),
                    unfused=len(args) > 4 and bool(int(args[4])))
        sys.exit(0)
    if args[:1] == ["--triage-chain"]:
        triage_chain()
        sys.exit(0)
    if args[:1] == ["--sanitize-chain"]:
        sanitize_chain()
        sys.exit(0)
    if args[:1] == ["--chain-model"]:
        # CPU: the decode chain in the host model, M = 1 and 16, without and with PDL, two steps each
        said = None
        for M in (1, 16):
            for pdl in (False, True):
                t0 = time.time()
                said = said or chain_in_model(M, pdl)
                print(f"chain M={M} pdl={pdl}: {said or 'clean'} ({time.time() - t0:.0f} s)", flush=True)
    elif args[:1] == ["--model"]:
        said = cpu_checks(("swiglu_model", "residual_model", "plain_model"))
    elif args[:1] == ["--compile"]:
        said = cpu_checks(("resources_sm_90", "pdl_sm_90"))
    elif len(args) == 1 and args[0].endswith(".json"):
        gpu_main(args[0])
        sys.exit(0)
    else:
        sys.exit(__doc__)
    print(said or "lesson 35's solution passes them")
    sys.exit(1 if said else 0)
