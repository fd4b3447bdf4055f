"""Issue 42's AMD question: lesson 36's attention v0 written for gfx950 in Triton 3.9.0's AMD Gluon, compiled and read
on its machine code as lessons 20–29 are, and run in the host model, all without a GPU.

The kernel is lesson 36's v0 with AMD's pieces in place of Hopper's, and lesson 36's own device functions where the
layouts allow (``key_blocks``, ``mask_scores``, ``online_softmax``, ``store_output``, called as they are, with the
MFMA's layouts passed in):

- one program per (block of BLOCK_M queries, batch·head); Q's tile read once with a buffer load into registers and
  moved into the MFMA's A-operand layout (``convert_layout``: once, before the key loop);
- for each key block, Kᵀ's and V's tiles copied straight into LDS (``async_copy.buffer_load_to_shared``, lesson 22's
  idiom), waited for (``wait_group(0)`` and a barrier), read in the MFMA's B-operand layouts. Kᵀ (head dim × keys, head
  dim contiguous) is the GEMM lessons' K-contiguous B; V (keys × head dim, head dim contiguous) is not, and its read
  is a transposing one;
- S = Q·Kᵀ by MFMA (``cdna3.mfma``), the online softmax in fp32 registers with exp2, P converted to the second MFMA's
  A operand, O += P·V by MFMA; O / l stored with a mask (lesson 36's ``store_output``).

P's layout, the second MFMA's A operand, is tried at three k_widths (how many consecutive keys a lane holds; V's
B operand takes the same, the two must agree): 2 calls lesson 36's ``online_softmax`` unchanged, which converts P to
``DotOperandLayout(0, o_layout, k_width=2)``; 4 and 8 go through this probe's copy of the function with P's layout
passed in (8 is the course's MFMA table's k_width for gfx950, ``gluon_course.amd.MFMA``; 4 is gfx942's). The host
model ignores layouts, so it checks the algorithm at every k_width but not Triton's lowering of each: that k_width 2
and 4 with gfx950's v_mfma_f32_16x16x32_bf16 give the right numbers is Triton's promise (it compiles them), not yet
a measurement.

What Triton 3.9.0 makes of it (``--compile``'s table; ``tests/test_probe_attention_amd.py`` pins the gfx950 facts):
on gfx950 every compile holds the MFMAs the tile needs and no other, one v_exp_f32 a score and a row, no LDS write in
the key loops (Q's tile goes through LDS once, before them), 16-byte copies into LDS, V read with the transposing
ds_read_b64_tr_b16, no scratch; P's conversion takes 16 lane swaps (v_permlane16/32_swap) a key block at k_width 2
and 8 and none at 4, where only the row max's and sum's 8 remain. gfx942 has neither the transposing read (V is read
one element at a time, ds_read_u16) nor a bf16 conversion instruction (rounding in integer instructions, a select
for NaN), copies 4 bytes a lane, and exchanges lanes through ds_bpermute.

    python tools/probes/probe_attention_amd.py --compile   CPU: gfx950 and gfx942 compiles, the table of facts
    python tools/probes/probe_attention_amd.py --model     CPU: the host model on lesson 36's odd shapes
    python tools/probes/probe_attention_amd.py --plants    CPU: one-mistake variants the model must reject

There is no GPU step: the course has no AMD GPU to run it on (lessons 20–29 have the same limit).
"""
from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import cdna3
from triton.experimental.gluon.language.amd.cdna4 import async_copy

from gluon_course import load_solution
from gluon_course.amd import DIRECT_COPY_BYTES, MFMA, amdgcn, tile_copy_layouts
from gluon_course.nvidia import attention

LESSON = load_solution("36")
key_blocks, mask_scores, online_softmax, store_output = (LESSON.key_blocks, LESSON.mask_scores,
                                                         LESSON.online_softmax, LESSON.store_output)

# AMD's usual attention tile for 4 waves: 128 queries (32 rows a wave, two 16-row MFMA tiles), keys in blocks of 64.
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4}
# The host model's: lesson 36's model tiles (64 queries, 32 keys, head dim 64), so its shapes cut every block.
MODEL_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4}
TARGETS = ("gfx950", "gfx942")
P_K_WIDTHS = (2, 4, 8)
LESSON_P_K_WIDTH = 2        # lesson 36's online_softmax: DotOperandLayout(0, o_layout, k_width=2)


# -- The kernel -------------------------------------------------------------------------------------------------------

@gluon.jit
def online_softmax_to(s, m_i, l_i, o, qk_scale, o_layout: gl.constexpr, p_layout: gl.constexpr):
    """Lesson 36's online_softmax with P's layout passed in: the same lines, the last one converting P to
    ``p_layout`` instead of the k_width-2 operand lesson 36 names."""
    m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
    alpha = gl.exp2(m_i - m_new)
    p = gl.exp2(s * qk_scale - m_new[:, None])
    l_new = l_i * alpha + gl.sum(p, axis=1)
    o = o * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    return gl.convert_layout(p.to(gl.bfloat16), p_layout), o, m_new, l_new


@gluon.jit
def amd_key_loop(q, kt_smem, v_smem, k_ptr, v_ptr, o, m_i, l_i, qk_scale, kv_row0, m0, Sk, first, last,
                 MASKED: gl.constexpr, CAUSAL: gl.constexpr, LESSON_SOFTMAX: gl.constexpr, s_layout: gl.constexpr,
                 o_layout: gl.constexpr, p_layout: gl.constexpr, kt_layout: gl.constexpr, v_layout: gl.constexpr,
                 kt_copy: gl.constexpr, v_copy: gl.constexpr):
    """Key blocks ``first`` to ``last`` of one query tile: Kᵀ's and V's tiles straight into LDS (masked past Sk only
    where ``MASKED``), S = Q·Kᵀ by MFMA, lesson 36's mask and online softmax, O += P·V by MFMA. One buffer each for
    Kᵀ and V: every wave must be done reading them (the barrier at the top) before the next block's copies land."""
    HEAD_DIM: gl.constexpr = kt_smem.shape[0]
    BLOCK_N: gl.constexpr = kt_smem.shape[1]
    BLOCK_M: gl.constexpr = q.shape[0]
    kt_d = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(1, kt_copy))
    kt_n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, kt_copy))
    v_n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, v_copy))
    v_d = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, v_copy))
    for j in range(first, last):
        n0 = j * BLOCK_N
        # Kᵀ's element (d, n) and V's (n, d) are K's and V's (kv_row0 + n0 + n, d): row-major, HEAD_DIM a row.
        kt_offsets = kt_d[:, None] + (kv_row0 + n0 + kt_n)[None, :] * HEAD_DIM
        v_offsets = (kv_row0 + n0 + v_n)[:, None] * HEAD_DIM + v_d[None, :]
        gl.barrier()
        if MASKED:
            # Keys past Sk copy zeros (the buffer's range check); their scores are set to −inf by mask_scores.
            async_copy.buffer_load_to_shared(kt_smem, k_ptr, kt_offsets,
                                             mask=(kt_d[:, None] < HEAD_DIM) & ((n0 + kt_n) < Sk)[None, :])
            async_copy.buffer_load_to_shared(v_smem, v_ptr, v_offsets,
                                             mask=((n0 + v_n) < Sk)[:, None] & (v_d[None, :] < HEAD_DIM))
        else:
            async_copy.buffer_load_to_shared(kt_smem, k_ptr, kt_offsets)
            async_copy.buffer_load_to_shared(v_smem, v_ptr, v_offsets)
        async_copy.commit_group()
        async_copy.wait_group(0)
        gl.barrier()
        s = cdna3.mfma(q, kt_smem.load(kt_layout), gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout))
        if MASKED:
            s = mask_scores(s, m0, n0, Sk, CAUSAL, s_layout)
        if LESSON_SOFTMAX:
            p, o, m_i, l_i = online_softmax(s, m_i, l_i, o, qk_scale, o_layout)
        else:
            p, o, m_i, l_i = online_softmax_to(s, m_i, l_i, o, qk_scale, o_layout, p_layout)
        o = cdna3.mfma(p, v_smem.load(v_layout), o)
    return o, m_i, l_i


@gluon.jit
def attention_amd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, Sq, Sk, qk_scale, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                         HEAD_DIM: gl.constexpr, CAUSAL: gl.constexpr, LESSON_SOFTMAX: gl.constexpr,
                         s_layout: gl.constexpr, o_layout: gl.constexpr, q_layout: gl.constexpr,
                         p_layout: gl.constexpr, kt_layout: gl.constexpr, v_layout: gl.constexpr,
                         q_copy: gl.constexpr, kt_copy: gl.constexpr, v_copy: gl.constexpr,
                         kt_shared: gl.constexpr, v_shared: gl.constexpr):
    """v0 on AMD: Q (B, H, Sq, D), K and V (B, H, Sk, D), O like Q, bf16, contiguous. Lesson 36's key_blocks splits
    the key blocks into unmasked ones and masked ones (the last partial block; with CAUSAL the diagonal)."""
    m0 = gl.program_id(0) * BLOCK_M
    bh = gl.program_id(1)
    # Q's tile once: rows past Sq read zeros (their O is never stored), then into the MFMA's A-operand layout.
    q_m = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, q_copy))
    q_d = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, q_copy))
    q_offsets = (bh * Sq + m0 + q_m)[:, None] * HEAD_DIM + q_d[None, :]
    q = cdna3.buffer_load(q_ptr, q_offsets, mask=((m0 + q_m) < Sq)[:, None] & (q_d[None, :] < HEAD_DIM), other=0.0)
    q = gl.convert_layout(q, q_layout)
    kt_smem = gl.allocate_shared_memory(k_ptr.dtype.element_ty, [HEAD_DIM, BLOCK_N], kt_shared)
    v_smem = gl.allocate_shared_memory(v_ptr.dtype.element_ty, [BLOCK_N, HEAD_DIM], v_shared)

    m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([BLOCK_M], gl.float32, layout=gl.SliceLayout(1, s_layout))
    o = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, layout=o_layout)
    n_full, n_all = key_blocks(m0, Sk, BLOCK_M, BLOCK_N, CAUSAL)
    o, m_i, l_i = amd_key_loop(q, kt_smem, v_smem, k_ptr, v_ptr, o, m_i, l_i, qk_scale, bh * Sk, m0, Sk, 0, n_full,
                               False, CAUSAL, LESSON_SOFTMAX, s_layout, o_layout, p_layout, kt_layout, v_layout,
                               kt_copy, v_copy)
    o, m_i, l_i = amd_key_loop(q, kt_smem, v_smem, k_ptr, v_ptr, o, m_i, l_i, qk_scale, bh * Sk, m0, Sk, n_full,
                               n_all, True, CAUSAL, LESSON_SOFTMAX, s_layout, o_layout, p_layout, kt_layout, v_layout,
                               kt_copy, v_copy)
    store_output(o, l_i, o_ptr, bh * Sq + m0, m0, Sq, o_layout)


def constexprs(target: str, head_dim: int, causal: bool, p: int = LESSON_P_K_WIDTH, cfg: dict | None = None) -> dict:
    """The kernel's constexprs for ``target``: one MFMA layout for S and O (AMD's accumulator layout does not depend
    on the tile's width), the operands' layouts, 16-byte copies of Q into registers, the target's widest direct-to-LDS
    copies of Kᵀ and V (gluon_course.amd.DIRECT_COPY_BYTES) into plain (unpadded) LDS tiles. ``p``: the k_width of
    P's and V's operand layouts (2: lesson 36's online_softmax itself)."""
    cfg = cfg or CONFIG
    BM, BN, nw = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"]
    m = MFMA[target]
    acc = gl.amd.AMDMFMALayout(version=m.version, instr_shape=list(m.instr_shape), transposed=True,
                               warps_per_cta=[nw, 1])
    q_copy, _ = tile_copy_layouts(BM, BN, head_dim, nw)
    _, kt_copy = tile_copy_layouts(BM, BN, head_dim, nw, vector_bytes=DIRECT_COPY_BYTES[target])
    v_copy, _ = tile_copy_layouts(BN, BN, head_dim, nw, vector_bytes=DIRECT_COPY_BYTES[target])
    return {"BLOCK_M": BM, "BLOCK_N": BN, "HEAD_DIM": head_dim, "CAUSAL": bool(causal),
            "LESSON_SOFTMAX": p == LESSON_P_K_WIDTH, "s_layout": acc, "o_layout": acc,
            "q_layout": gl.DotOperandLayout(operand_index=0, parent=acc, k_width=m.k_width),
            "kt_layout": gl.DotOperandLayout(operand_index=1, parent=acc, k_width=m.k_width),
            "p_layout": gl.DotOperandLayout(operand_index=0, parent=acc, k_width=p),
            "v_layout": gl.DotOperandLayout(operand_index=1, parent=acc, k_width=p),
            "q_copy": q_copy, "kt_copy": kt_copy, "v_copy": v_copy,
            "kt_shared": gl.SwizzledSharedLayout(1, 1, 1, order=[0, 1]),
            "v_shared": gl.SwizzledSharedLayout(1, 1, 1, order=[1, 0])}


SIGNATURE = {"q_ptr": "*bf16", "k_ptr": "*bf16", "v_ptr": "*bf16", "o_ptr": "*bf16", "Sq": "i32", "Sk": "i32",
             "qk_scale": "fp32"}


def compiled(target: str = "gfx950", head_dim: int = 128, causal: bool = False, p: int = LESSON_P_K_WIDTH,
             cfg: dict | None = None):
    """The kernel compiled for ``target`` through the course's compile path (pointers promised 16-byte aligned, as a
    launch on torch's allocations finds them)."""
    from gluon_course.machine import compile_cached

    cfg = cfg or CONFIG
    return compile_cached(attention_amd_kernel, target, signature=SIGNATURE,
                          constexprs=constexprs(target, head_dim, causal, p, cfg),
                          aligned=("q_ptr", "k_ptr", "v_ptr", "o_ptr"), num_warps=cfg["num_warps"])


# -- 1. The machine code ----------------------------------------------------------------------------------------------

def key_loops(k) -> list:
    """The kernel's loops that hold an MFMA, in listing order: the unmasked key blocks, then the masked ones (LLVM
    keeps the source's order; ``facts_problem`` checks it by the mask's selects)."""
    return [lp for lp in amdgcn.loops(k) if any(i.opcode.startswith("v_mfma") for i in lp.instructions)]


def _count(instructions, pattern: str) -> int:
    rx = re.compile(pattern)
    return sum(1 for i in instructions if rx.match(i.opcode))


def _by_opcode(instructions, category: str) -> dict:
    found: dict[str, int] = {}
    for i in instructions:
        if amdgcn.category(i) == category:
            found[i.opcode] = found.get(i.opcode, 0) + 1
    return dict(sorted(found.items()))


# Instructions that move values between the lanes of a wave: gfx950's lane swaps, the LDS crossbar's permutes (no LDS
# memory), DPP and swizzles.
CROSS_LANE = r"v_permlane|ds_bpermute|ds_permute|ds_swizzle|v_mov_b32_dpp|\S+_dpp$"


def loop_facts(loop, target: str, cfg: dict) -> dict:
    """One key loop's facts: its MFMAs by opcode; v_exp_f32 against one a score and one a row (alpha) a lane holds;
    LDS reads by opcode and writes; copies into LDS by opcode; loads into registers; waits, barriers; instructions
    that move values between lanes (``cross_lane``; ``reduction_cross_lane`` of them are the row max's and row sum's
    on paper: a row's scores lie across 4 lanes, 2 exchange steps each, for each row a lane holds); fp32 → bf16
    conversions (v_cvt_pk_bf16_f32, gfx950's; gfx942 has none and rounds with integer instructions and a NaN select);
    the selects (v_cndmask); the whole instruction mix."""
    ins = loop.instructions
    lanes = 64 * cfg["num_warps"]
    rows = cfg["BLOCK_M"] // (MFMA[target].instr_shape[0] * cfg["num_warps"])
    return {"mfma": _by_opcode(ins, "MFMA"), "exp": _count(ins, r"v_exp_f32"),
            "scores_per_lane": cfg["BLOCK_M"] * cfg["BLOCK_N"] // lanes, "rows_per_lane": rows,
            "lds_reads": _by_opcode(ins, "LDS read"), "lds_writes": _by_opcode(ins, "LDS write"),
            "copies": _by_opcode(ins, "buffer load → LDS"),
            "loads": {**_by_opcode(ins, "buffer load"), **_by_opcode(ins, "global load")},
            "waits": len(amdgcn.waits(ins)), "vmcnt0": sum(1 for w in amdgcn.waits(ins) if "vmcnt(0)" in w),
            "barriers": _count(ins, r"s_barrier$"), "cross_lane": _count(ins, CROSS_LANE),
            "reduction_cross_lane": 2 * 2 * rows, "to_bf16": _count(ins, r"v_cvt_pk_bf16_f32"),
            "selects": _count(ins, r"v_cndmask"),
            "mix": {name: sum(1 for i in ins if amdgcn.category(i) == name) for name, _ in amdgcn.MIX}}


def kernel_facts(target: str, head_dim: int, causal: bool, p: int = LESSON_P_K_WIDTH, cfg: dict | None = None) -> dict:
    """One compile's facts: the budget, LDS writes outside the loops (Q's one conversion), loop_facts of each key
    loop."""
    cfg = cfg or CONFIG
    k = compiled(target, head_dim, causal, p, cfg)
    everything = [i for b in amdgcn.blocks(k.amdgcn) for i in b.instructions]
    before = amdgcn.before_loop(k)
    memory = ("buffer load", "global load", "LDS write", "LDS read")
    return {"target": target, "head_dim": head_dim, "causal": causal, "p": p, "cfg": cfg,
            "budget": amdgcn.budget(k, cfg["num_warps"]), "kernel_lds_writes": _count(everything, r"ds_(write|store)"),
            "before_loops": {op: n for c in memory for op, n in _by_opcode(before, c).items()},
            "stores": _by_opcode(everything, "store"),
            "loops": [loop_facts(lp, target, cfg) for lp in key_loops(k)], "compiled": k}


def expected(target: str, head_dim: int, cfg: dict) -> dict:
    """What one key block costs a wave on paper: MFMAs for S (BLOCK_M × BLOCK_N × HEAD_DIM) and for P·V (BLOCK_M ×
    HEAD_DIM × BLOCK_N), each instruction M × N × K of the target's, shared by the waves; copies of Kᵀ and V (bf16) of
    the target's widest direct-to-LDS vector, one a lane."""
    m, n, k = MFMA[target].instr_shape
    lanes = 64 * cfg["num_warps"]
    mfma = 2 * cfg["BLOCK_M"] * cfg["BLOCK_N"] * head_dim // (m * n * k * cfg["num_warps"])
    copies = 2 * cfg["BLOCK_N"] * head_dim * 2 // (lanes * DIRECT_COPY_BYTES[target])
    return {"mfma": {MFMA[target].opcode("bf16"): mfma}, "copies": copies}


def facts_problem(f: dict) -> str | None:
    """What the probe asserts of every compile, None when all hold: no scratch; two key loops; in each, the MFMAs the
    tile needs and no other, one v_exp_f32 a score plus one a row (alpha), no LDS write (P and alpha change layout in
    registers; Kᵀ and V land by direct copies), the copies the tiles need; the masked loop with more selects than the
    unmasked one (the mask's), and on gfx950 none in the unmasked one."""
    where = f"{f['target']}, head dim {f['head_dim']}{', causal' if f['causal'] else ''}, P k_width {f['p']}"
    b = f["budget"]
    if b.scratch_bytes or b.vgpr_spills:
        return f"{where}: {b.scratch_bytes} bytes of scratch a lane ({b.vgpr_spills} VGPRs spilled)"
    loops = f["loops"]
    if len(loops) != 2:
        return f"{where}: {len(loops)} loops hold an MFMA where v0 has two (unmasked key blocks, then masked ones)"
    want = expected(f["target"], f["head_dim"], f["cfg"])
    for which, loop in zip(("unmasked", "masked"), loops):
        if loop["mfma"] != want["mfma"]:
            return f"{where}: the {which} key loop's MFMAs are {loop['mfma']} where the tile needs {want['mfma']}"
        exps = loop["scores_per_lane"] + loop["rows_per_lane"]
        if loop["exp"] != exps:
            return (f"{where}: the {which} key loop has {loop['exp']} v_exp_f32 where one a score "
                    f"({loop['scores_per_lane']}) and one a row ({loop['rows_per_lane']}) make {exps}")
        if loop["lds_writes"]:
            return f"{where}: the {which} key loop writes LDS ({loop['lds_writes']}): a layout conversion through LDS"
        if sum(loop["copies"].values()) != want["copies"]:
            return (f"{where}: the {which} key loop copies {loop['copies']} into LDS where Kᵀ and V take "
                    f"{want['copies']}")
    if f["target"] == "gfx950" and loops[0]["selects"]:
        return f"{where}: the unmasked key loop holds {loops[0]['selects']} v_cndmask: a mask every block pays for"
    if loops[1]["selects"] <= loops[0]["selects"]:
        return f"{where}: the masked key loop holds no more v_cndmask than the unmasked one: the mask selects nothing"
    return None


def _ops(d: dict) -> str:
    return ", ".join(f"{n}× {op}" for op, n in d.items()) or "none"


def facts_rows(f: dict) -> list[str]:
    """One compile's two rows of the table."""
    b, occ = f["budget"], f["budget"].occupancy
    rows = []
    for which, loop in zip(("unmasked", "masked"), f["loops"]):
        rows.append(
            f"| {f['target']} | {f['head_dim']} | {'yes' if f['causal'] else 'no'} | {f['p']} | {which} | "
            f"{_ops(loop['mfma'])} | {loop['exp']} / ({loop['scores_per_lane']} + {loop['rows_per_lane']}) | "
            f"{_ops(loop['lds_reads'])} | {sum(loop['lds_writes'].values())} | {_ops(loop['copies'])} | "
            f"{sum(loop['loads'].values())} | {loop['waits']} ({loop['vmcnt0']}) | {loop['barriers']} | "
            f"{loop['cross_lane']} ({loop['cross_lane'] - loop['reduction_cross_lane']}) | {loop['to_bf16']} | "
            f"{loop['selects']} | {b.arch_vgprs} + {b.agprs} | {b.lds_bytes} | {b.scratch_bytes} | "
            f"{occ.blocks if occ else '?'} ({occ.limited_by if occ else '?'}) |")
    return rows


TABLE_HEAD = ("| target | hd | causal | P k_width | loop | MFMA | v_exp / (scores + rows) | LDS reads | LDS writes | "
              "copies → LDS | loads → regs | s_waitcnt (vmcnt(0)) | s_barrier | cross-lane (beyond the reductions) | "
              "v_cvt_pk_bf16 | v_cndmask | VGPR arch + AGPR | LDS bytes | scratch | workgroups/CU (limit) |")


def facts_table(targets=TARGETS, head_dims=(64, 128), p_widths=P_K_WIDTHS) -> tuple[str, list[dict]]:
    """Every compile's facts as a markdown table (one row a key loop), and the facts themselves."""
    rows, facts = [TABLE_HEAD, "|" + "---|" * (TABLE_HEAD.count("|") - 1)], []
    outside = ["", "| target | hd | causal | P k_width | before the key loops (Q's tile) | stores (O) |",
               "|---|---|---|---|---|---|"]
    for target in targets:
        for hd in head_dims:
            for causal in (False, True):
                for p in p_widths:
                    f = kernel_facts(target, hd, causal, p)
                    facts.append(f)
                    rows += facts_rows(f)
                    outside.append(f"| {target} | {hd} | {'yes' if causal else 'no'} | {p} | "
                                   f"{_ops(f['before_loops'])} | {_ops(f['stores'])} |")
    return "\n".join(rows + outside), facts


def compile_check(targets=TARGETS, head_dims=(64, 128), p_widths=P_K_WIDTHS, show=print) -> str | None:
    """Every compile's facts, printed as a table, then facts_problem on each: None when all hold."""
    from gluon_course.machine.compile import CompileFailed

    try:
        table, facts = facts_table(targets, head_dims, p_widths)
    except CompileFailed as e:
        return f"{e.kernel_name} did not compile for {e.target}: {e.message}"
    show(table)
    for f in facts:
        problem = facts_problem(f)
        if problem:
            return problem
    return None


# -- 2. The host model ------------------------------------------------------------------------------------------------

def model_run(q, k, v, causal: bool, p: int = LESSON_P_K_WIDTH, cfg: dict | None = None, target: str = "gfx950"):
    """The kernel in the host model on numpy Q, K, V (B, H, S, D; values exact in bf16): O (the fp32 values of its
    bf16), how often each element was written."""
    from gluon_course.model import Buffer, Pointer
    from gluon_course.model.run import run as run_kernel

    cfg = cfg or MODEL_CONFIG
    B, H, Sq, D = q.shape
    Sk = k.shape[2]
    bufs = [Buffer(n, x.reshape(-1, D).astype(np.float32), gl.bfloat16) for n, x in (("Q", q), ("K", k), ("V", v))]
    o_buf = Buffer("O", np.zeros((B * H * Sq, D), np.float32), gl.bfloat16, poison=True)
    grid = (-(-Sq // cfg["BLOCK_M"]), B * H)
    with np.errstate(over="ignore", invalid="ignore"):
        run_kernel(attention_amd_kernel, grid, *(Pointer(b) for b in bufs), Pointer(o_buf), Sq, Sk,
                   1 / math.sqrt(D) * attention.LOG2E, num_warps=cfg["num_warps"],
                   **constexprs(target, D, causal, p, cfg))
    shape = (B, H, Sq, D)
    return o_buf.values().reshape(shape), o_buf.writes.reshape(shape)


def model_problem(shape, causal: bool, p: int = LESSON_P_K_WIDTH, scale: float = 1.0) -> str | None:
    """One shape (B, H, Sq, Sk) at head dim 64 in the host model against lesson 36's fp64 reference and its bound,
    O poisoned, every element written once: None or a sentence."""
    from gluon_course.model import ModelError, ModelUnsupported

    B, H, Sq, Sk = shape
    q, k, v = attention.inputs(B, H, Sq, Sk, attention.MODEL_HEAD_DIM, scale)
    where = (f"{'causal' if causal else 'not causal'}, P k_width {p}, batch {B} × {H} heads, Sq {Sq}, Sk {Sk}"
             + (f", scores scaled ×{scale ** 2:g}" if scale != 1 else ""))
    try:
        got, writes = model_run(q, k, v, causal, p)
    except ModelUnsupported as e:
        return f"the host model does not model {e}: not run ({where})"
    except ModelError as e:
        return f"in the host model, {where}: {e}"
    want, bound = attention.reference(q, k, v, causal, 1 / math.sqrt(attention.MODEL_HEAD_DIM))
    problem = attention.compare(got, want, bound, writes)
    return f"in the host model, {where}: {problem}" if problem else None


def model_check(shapes=attention.MODEL_SHAPES, p_layouts=(LESSON_P_K_WIDTH, 8), large: bool = True,
                show=print) -> str | None:
    """Lesson 36's model shapes (one query and one key, tails past every block, Sq ≠ Sk both ways), causal and not,
    then scores past fp32's exp2 range: None when every run is within the bound."""
    runs = [(shape, causal, p, 1.0) for p in p_layouts for shape in shapes for causal in (False, True)]
    if large:
        runs += [(attention.LARGE_SHAPE, False, p, attention.LARGE_SCALE) for p in p_layouts]
    for shape, causal, p, scale in runs:
        problem = model_problem(shape, causal, p, scale)
        if problem:
            return problem
    show(f"host model: {len(runs)} runs within lesson 36's bound, every element of O written once "
         f"(tiles {MODEL_CONFIG['BLOCK_M']} × {MODEL_CONFIG['BLOCK_N']}, head dim {attention.MODEL_HEAD_DIM})")
    return None


# -- One-mistake variants the host model must reject ------------------------------------------------------------------
# (mistake, old text (once in this file, above this marker), new text, words the model's sentence must hold).
PLANTS = [
    ("the wait for the copies left out: S reads Kᵀ from LDS while its copy may still be landing",
     "        async_copy.wait_group(0)\n        gl.barrier()\n        s = cdna3.mfma(",
     "        gl.barrier()\n        s = cdna3.mfma(",
     "copy"),
    ("the masked loop without the mask: keys past Sk (zeros, score 0) and, with causal, keys after the query count",
     "        if MASKED:\n            s = mask_scores(", "        if False:\n            s = mask_scores(",
     "outside the bound"),
    ("the copies of the last partial block unmasked: they read past K's and V's end",
     "            async_copy.buffer_load_to_shared(kt_smem, k_ptr, kt_offsets,\n"
     "                                             mask=(kt_d[:, None] < HEAD_DIM) & ((n0 + kt_n) < Sk)[None, :])",
     "            async_copy.buffer_load_to_shared(kt_smem, k_ptr, kt_offsets)",
     "outside"),
]


def planted(old: str, new: str, directory):
    """This probe with ``old`` replaced by ``new``, loaded as a module from ``directory``."""
    import importlib.util

    source = Path(__file__).read_text(encoding="utf-8")
    marker = "# -- One-mistake variants"
    code, rest = source.split(marker, 1)
    if code.count(old) != 1:
        raise ValueError(f"a plant's text occurs {code.count(old)} times in the probe, not once: {old[:60]!r}")
    path = Path(directory) / "probe_attention_amd_planted.py"
    path.write_text(code.replace(old, new) + marker + rest, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"probe_attention_amd_planted_{abs(hash(new))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plant_verdicts(plants=PLANTS, shapes=((1, 2, 100, 17), (1, 2, 17, 100)), show=print) -> str | None:
    """Each plant through the host model on ``shapes`` (causal and not): None when each is rejected with its words."""
    import tempfile

    for what, old, new, words in plants:
        with tempfile.TemporaryDirectory() as directory:
            module = planted(old, new, directory)
            said = module.model_check(shapes, p_layouts=(LESSON_P_K_WIDTH,), large=False, show=lambda _: None)
        if not said or words not in said:
            return f"the plant '{what}' was not rejected as expected: {said}"
        show(f"  rejected: {what}\n    {said[:300]}")
    return None


def main(argv) -> int:
    said = None
    if "--compile" in argv:
        said = compile_check()
    elif "--model" in argv:
        said = model_check()
    elif "--plants" in argv:
        said = plant_verdicts()
    else:
        print(__doc__)
        return 2
    print(said or "all hold")
    return 1 if said else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
