"""Issue 25's last open target, one GPU call of about two minutes: can any kernel that only reads W reach 85% of
the copy's bandwidth at lesson 32's decode sizes (W of 32, 48 and 112 MiB), timed as lesson 32's ``decode_roofline``
times the GEMM (``cold_kernel_ms``: L2 emptied by a read before each call, CUDA-graph replay, the emptying's own
time subtracted)?

If the best pure read of W's bytes stays under 85% at 32 MiB, no GEMM that must read them can reach the target there,
whatever its tiles; if one reaches it, the GEMM's own costs (split-K's reduction, the epilogue) are what is left.

Kernels timed (all Gluon, sm_90, compiled on the device's Triton 3.9.0):
  empty      one store per program: what a launch costs in this timing, with nothing read
  tma        W in [64, 128] boxes through a ring of STAGES shared-memory slots and TMA (as lesson 32's decode path
             copies it), PROGRAMS programs each reading one contiguous run of boxes; nothing but the final slot is read
             from shared memory (one value a program is stored, so the copies have a consumer). The kernel was this
             file's when the trial ran; it is now gluon_course.nvidia.read_ceiling's, unchanged but for its name and PDL's default.
  tma+pdl    the same compiled with launch_pdl=True and a griddepcontrol.wait after the first STAGES copies: a
             kernel launched with programmatic stream serialization may start before the previous kernel (here the
             L2-emptying read) has finished; the copies of W, which nothing before writes, go first
  ld         plain vectorised loads (16 bytes a thread a load), summed in fp32, several programs per SM
and beside them lesson 32's linear (its table's configuration and a few forced ones), F.linear and torch.sum of W.
Each is also timed with L2 kept (graph_ms: W read from L2 where it fits) and, for the PDL question, without a graph:
``calls`` × (empty L2, kernel) launched on the stream between two events, less the emptying alone.

    python tools/probes/probe_stream.py OUT.json
"""
import json
import statistics
import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from gluon_course.nvidia.read_ceiling import BOX, tma_read_kernel


@gluon.jit
def empty_kernel(out_ptr):
    gl.store(out_ptr + gl.program_id(0), 1.0)


@gluon.jit
def ld_stream_kernel(w_ptr, out_ptr, numel, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([8], [32], [gl.num_warps()], [0])
    offsets = gl.arange(0, BLOCK, layout=layout)
    acc = gl.zeros([BLOCK], gl.float32, layout=layout)
    for start in range(gl.program_id(0) * BLOCK, numel, gl.num_programs(0) * BLOCK):
        acc += gl.load(w_ptr + start + offsets, mask=start + offsets < numel, other=0.0).to(gl.float32)
    gl.store(out_ptr + gl.program_id(0), gl.sum(acc, axis=0))


def tma_call(w, out, programs, stages, pdl):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layout = gl.NVMMASharedLayout.get_default_for(list(BOX), gl.bfloat16)
    desc = TensorDescriptor.from_tensor(w, list(BOX), layout)
    boxes_per_row = w.shape[1] // BOX[1]
    boxes = (w.shape[0] // BOX[0]) * boxes_per_row
    extra = {"launch_pdl": True} if pdl else {}
    return lambda: tma_read_kernel[(programs,)](desc, out, boxes, boxes_per_row, STAGES=stages, PDL=pdl,
                                                  num_warps=4, **extra)


def stream_cold_ms(fn, calls=20, rounds=5, flush_bytes=256 << 20):
    """``calls`` × (L2 emptied by a read, ``fn``) launched on the stream between two events, less the emptying alone,
    per call: cold_kernel_ms without a CUDA graph (a launch with programmatic stream serialization keeps it here)."""
    buffer = torch.zeros(flush_bytes // 4, dtype=torch.int32, device="cuda")

    def timed(body):
        body()
        torch.cuda.synchronize()
        times = []
        for _ in range(rounds):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                body()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        return statistics.median(times)

    both = timed(lambda: (buffer.sum(), fn()))
    alone = timed(lambda: buffer.sum())
    del buffer
    return max(both - alone, 0.0) / calls


def main(path):
    import torch.nn.functional as F

    from gluon_course import load_solution
    from gluon_course.measure.linear import linear_inputs
    from gluon_course.measure.timing import cold_kernel_ms, copy_ceiling_tbs, graph_ms

    linear = load_solution("32").linear
    ceiling = copy_ceiling_tbs()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = torch.zeros(8 * sms, dtype=torch.float32, device="cuda")
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "copy_tbs": ceiling, "sms": sms,
              "sizes": {}}
    for N in (4096, 6144, 14336):
        M, K = 16, 4096
        a, w, c = linear_inputs(M, N, K, seed=N)
        nbytes = w.numel() * w.element_size()
        kernels = {"empty": lambda: empty_kernel[(sms,)](out, num_warps=4)}
        for programs in (128, sms, 2 * sms):
            for stages in (4, 8, 12):
                if programs > sms and stages > 6:
                    continue                      # two programs an SM: at most 6 slots of 16 KiB each
                kernels[f"tma p{programs} s{stages}"] = tma_call(w, out, programs, stages, False)
        kernels[f"tma+pdl p{sms} s8"] = tma_call(w, out, sms, 8, True)
        for per_sm in (4, 8):
            kernels[f"ld p{per_sm * sms} b4096"] = (
                lambda g=per_sm * sms: ld_stream_kernel[(g,)](w, out, w.numel(), BLOCK=4096, num_warps=4))
        kernels["ours (table)"] = lambda: linear(a, w.t(), c)
        for cfg in ({"SPLIT_K": 2, "STAGES": 8}, {"SPLIT_K": 4, "STAGES": 6}, {"SPLIT_K": 1, "STAGES": 8}):
            base = {"BLOCK_M": 64, "BLOCK_N": 16, "BLOCK_K": 128, "num_warps": 4, "SWAP_AB": True, "W_FIRST": 0}
            kernels["ours " + ",".join(f"{k}={v}" for k, v in cfg.items())] = (
                lambda cfg=cfg, base=base: linear(a, w.t(), c, **{**base, **cfg}))
        kernels["F.linear"] = lambda: F.linear(a, w)
        kernels["torch.sum"] = lambda: w.sum(dtype=torch.float32)
        rows = {}
        for name, fn in kernels.items():
            try:
                fn()
                torch.cuda.synchronize()
                cold = [cold_kernel_ms(fn) for _ in range(3)]
                row = {"cold_us": 1e3 * statistics.median(cold), "cold_each_us": [1e3 * x for x in cold],
                       "warm_us": 1e3 * graph_ms(fn), "stream_cold_us": 1e3 * stream_cold_ms(fn)}
                if name != "empty":
                    row["fraction"] = nbytes / (row["cold_us"] * 1e-6) / 1e12 / ceiling
                    row["stream_fraction"] = nbytes / (row["stream_cold_us"] * 1e-6) / 1e12 / ceiling
            except Exception as e:  # noqa: BLE001 - one variant's failure is its row
                row = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            rows[name] = row
        result["sizes"][f"{nbytes >> 20} MiB ({M}x{N}x{K})"] = rows
        json.dump(result, open(path, "w"), indent=1)
        del a, w, c
    print(f"copy {ceiling:.2f} TB/s; cold = graph replay after a read flush (85% target at 32 MiB: "
          f"{(32 << 20) / (0.85 * ceiling * 1e12) * 1e6:.2f} us)")
    for size, rows in result["sizes"].items():
        print(size)
        for name, row in rows.items():
            if "error" in row:
                print(f"  {name:34} {row['error'][:100]}")
                continue
            frac = f"{row.get('fraction', 0):6.1%}" if "fraction" in row else "      "
            sfrac = f"{row.get('stream_fraction', 0):6.1%}" if "stream_fraction" in row else "      "
            print(f"  {name:34} cold {row['cold_us']:7.2f} us {frac}  warm {row['warm_us']:7.2f}  "
                  f"no-graph {row['stream_cold_us']:7.2f} {sfrac}")


if __name__ == "__main__":
    main(sys.argv[1])
