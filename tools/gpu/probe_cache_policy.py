"""Does an L2 eviction hint on lesson 32's TMA copies change what do_bench charges it? (One GPU call, a few minutes.)

probe_bench_gap.py (2026-12-03) found that after do_bench's L2 overwrite lesson 32's kernel pays 3.3 µs more than
after an L2-emptying read at 512 × 6144 × 4096, where F.linear pays 0.4 µs: the write-back of the dirty lines the
overwrite leaves, which the kernel's own lines evict. TMA copies take an L2 eviction priority in Triton 3.9.0
(``tma.async_load(..., cache_policy=CachePolicy(l2=FractionalEvictionPolicy(...)))``). A line loaded ``evict_first``
is the first a later allocation evicts, so a kernel that streams W with that hint may evict its own clean lines
instead of the flush's dirty ones, and write back less while it runs.

Each variant is lesson 32's solution with the hints written into its TMA copies (W's, the activations' or C's), a
module of its own; every variant is checked against an fp32 reference, then timed on each shape in 3 interleaved
rounds beside F.linear: do_bench's median, the call after a write flush and after a read flush (cold_kernel_ms).

    python tools/gpu/probe_cache_policy.py OUT.json [MxNxK ...]      (GPU; PROBE_VARIANTS="none,W first" for fewer)
    python tools/gpu/probe_cache_policy.py --compile                  (CPU: every variant compiles for sm_90)
"""
import json
import os
import re
import sys
import tempfile
from pathlib import Path

SHAPES = ("512x6144x4096", "128x6144x4096", "512x14336x4096", "128x4096x4096", "64x4096x4096", "16x4096x4096")
# Which copies carry which L2 priority, by role: W (the weights, N × K), X (the activations), C (the output).
VARIANTS = {
    "none": {},
    "W first": {"W": "evict_first"},
    "W first, X last": {"W": "evict_first", "X": "evict_last"},
    "C first": {"C": "evict_first"},
    "W first, C first": {"W": "evict_first", "C": "evict_first"},
}
ROUNDS = 3
# PROBE_VARIANTS="none,W first" times only those (the names above, comma-separated).
if os.environ.get("PROBE_VARIANTS"):
    VARIANTS = {name: VARIANTS[name] for name in os.environ["PROBE_VARIANTS"].split(",")}


def _policy(priority):
    if priority is None:
        return "gl.constexpr(None)"
    return f"gl.constexpr(_CachePolicy(l2=_Fractional({priority!r}, 1.0)))"


def variant_source(source: str, roles: dict, swap_ab: bool) -> str:
    """Lesson 32's solution with the TMA copies of ``roles`` given their L2 priority. The kernel's A is W under
    swap-AB and the activations otherwise (its B the other one)."""
    a_role, b_role = ("W", "X") if swap_ab else ("X", "W")
    header = ("from triton.experimental.gluon.language.nvidia.ampere import CachePolicy as _CachePolicy\n"
              "from triton.experimental.gluon.language.nvidia.ampere import FractionalEvictionPolicy as _Fractional\n"
              f"_POLICY_A = {_policy(roles.get(a_role))}\n_POLICY_B = {_policy(roles.get(b_role))}\n"
              f"_POLICY_C = {_policy(roles.get('C'))}\n")
    marker = "GL_DTYPES = "
    if marker not in source:
        raise SystemExit("lesson 32's solution changed: no GL_DTYPES line to put the policies before")
    out = source.replace(marker, header + marker, 1)
    counts = {}
    for desc, ring, name in (("a_desc", "a_ring", "_POLICY_A"), ("b_desc", "b_ring", "_POLICY_B"),
                             ("b2_desc", "b2_ring", "_POLICY_B")):
        pattern = rf"(tma\.async_load\({desc}, [^\n]*{ring}\.index\(slot\))\)"
        out, counts[desc] = re.subn(pattern, rf"\1, cache_policy={name})", out)
    out, counts["store"] = re.subn(r"(tma\.async_store\(c_desc, \[[^\]]*\], c_smem)\)", r"\1, cache_policy=_POLICY_C)",
                                   out)
    if counts != {"a_desc": 2, "b_desc": 2, "b2_desc": 2, "store": 2}:
        raise SystemExit(f"lesson 32's copies changed: hints written into {counts} (expected 2 of each)")
    return out


def load_variants(swap_ab: bool) -> dict:
    from gluon_course.course import load_module_file, repo_root

    source = (next((repo_root() / "solutions").glob("32-*")) / "solution.py").read_text()
    folder = Path(tempfile.mkdtemp(prefix="cache-policy-"))
    mods = {}
    for i, (name, roles) in enumerate(VARIANTS.items()):
        path = folder / f"variant_{int(swap_ab)}_{i}.py"
        path.write_text(variant_source(source, roles, swap_ab))
        mods[name] = load_module_file(path, f"lesson32_policy_{int(swap_ab)}_{i}")
    return mods


def compile_all() -> None:
    """On the CPU: every variant, unswapped and swapped, at a wide tile and at a swap-AB tile, compiles for sm_90."""
    from gluon_course.course import load_module_file, repo_root

    checks = load_module_file(next((repo_root() / "solutions").glob("32-*")) / "checks.py", "lesson32_checks_probe")
    for swap_ab, overrides in ((False, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_N2": 64, "STAGES": 4}),
                               (True, {"BLOCK_M": 128, "BLOCK_N": 16, "BLOCK_K": 128, "STAGES": 6, "num_warps": 4,
                                       "SWAP_AB": True})):
        for name, mod in load_variants(swap_ab).items():
            k = checks._compiled(mod, overrides)
            hinted = k.ptx.count("L2::cache_hint")
            print(f"swap_ab={swap_ab!s:5} {name:18} compiled; {hinted} PTX copies with an L2 cache hint")


def main(out: str, shapes) -> None:
    import torch
    import torch.nn.functional as F

    from gluon_course.measure.linear import linear_inputs
    from gluon_course.measure.timing import bench_ms, cold_kernel_ms

    variants = {False: load_variants(False), True: load_variants(True)}
    rows = {}
    for i, shape in enumerate(shapes):
        M, N, K = map(int, shape.split("x"))
        a, w, c = linear_inputs(M, N, K, seed=i)
        b = w.t()
        base = variants[False]["none"]
        base.linear(a, b, c)
        swap_ab = base._TABLED.plan(a, b, c).swap_ab
        mods = variants[swap_ab]
        reference = (a.float() @ b.float())
        calls = {"F.linear": lambda: F.linear(a, w)}
        errors = {}
        for name, mod in mods.items():
            c.fill_(float("nan"))
            mod.linear(a, b, c)
            torch.cuda.synchronize()
            errors[name] = float((c.float() - reference).abs().max() / reference.abs().max())
            calls[name] = (lambda mod=mod: mod.linear(a, b, c))
        timings = {who: {"bench_us": [], "cold_write_us": [], "cold_read_us": []} for who in calls}
        for _ in range(ROUNDS):
            for who, fn in calls.items():
                timings[who]["bench_us"].append(1e3 * bench_ms(fn))
                timings[who]["cold_write_us"].append(1e3 * cold_kernel_ms(fn, flush="write"))
                timings[who]["cold_read_us"].append(1e3 * cold_kernel_ms(fn, flush="read"))
        rows[shape] = {"swap_ab": swap_ab, "config": base._TABLED.plan(a, b, c).config, "max_rel_error": errors,
                       "timings": timings}
        del a, w, b, c, reference
    json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rounds": ROUNDS,
               "variants": VARIANTS, "shapes": rows}, open(out, "w"), indent=1)

    def med(xs):
        return sorted(xs)[len(xs) // 2]

    print(f"{'shape':16} {'who':18} {'bench':>8} {'cold_w':>8} {'cold_r':>8} {'w-r':>6} {'err':>8}")
    for shape, row in rows.items():
        for who, t in row["timings"].items():
            b_, w_, r_ = med(t["bench_us"]), med(t["cold_write_us"]), med(t["cold_read_us"])
            err = row["max_rel_error"].get(who)
            print(f"{shape:16} {who:18} {b_:8.2f} {w_:8.2f} {r_:8.2f} {w_ - r_:6.2f} "
                  f"{'' if err is None else f'{err:8.1e}'}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    if sys.argv[1] == "--compile":
        compile_all()
    else:
        main(sys.argv[1], sys.argv[2:] or SHAPES)
