"""Proof that reading SASS through nvdisasm changes nothing: over every cubin under a Triton cache directory, the
toolkit's parser (``gluon_course.machine.compile._parse_sass``) gives the same ``Instruction`` list (address, opcode,
text, in order) from ``Compiled.sass``'s nvdisasm listing as from ``cuobjdump -sass``, the tool it replaced.

    python tools/gpu/compare_disassemblers.py CACHE_DIR

For each ``*.cubin`` under CACHE_DIR (the cache a `make test` leaves holds some 360, sm_75 to sm_120a among them)
it runs both tools on the binary, through the toolkit's own functions and into a fresh, temporary Triton cache
(CACHE_DIR is only read, and no earlier disassembly is reused): ``_cuobjdump(cubin, "-sass")``, and nvdisasm with
``NVDISASM_FLAGS``, its labels resolved by ``_resolve_labels``. It prints how many cubins give identical lists, the
first difference of each that does not, the cubins whose nvdisasm listing ``Compiled.sass`` would not use (it falls
back to cuobjdump for them: more than one code section, a reference that resolves to no instruction, an instruction
line the parser skips) and the CPU time of each tool's runs. Exit status 0 only when every cubin the new path reads
gives the list cuobjdump gives.

CPU only: no GPU, no driver. Takes about 1 s of CPU per cubin (both tools), so a few minutes for a full cache.
"""
from __future__ import annotations

import os
import re
import resource
import sys
import tempfile
from pathlib import Path


def _children_user_cpu() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime


def _target(listing: str) -> str:
    """The architecture nvdisasm's header names: ".target sm_90a", or the ELF flags' EF_CUDA_SM86 where it prints no
    .target line (a binary in the older ELF layout, after its "switching to Old format" warning)."""
    m = re.search(r"^\s*\.target\s+(sm_\w+)", listing, re.M) or re.search(r"EF_CUDA_SM(\d+)\b", listing)
    if not m:
        return "?"
    return m.group(1) if m.group(1).startswith("sm_") else f"sm_{m.group(1)}"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not Path(argv[1]).is_dir():
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    cubins = sorted(Path(argv[1]).rglob("*.cubin"))
    if not cubins:
        print(f"no *.cubin under {argv[1]}", file=sys.stderr)
        return 2
    # A cache of our own for the tools' outputs, removed at the end: each tool really runs once per binary here.
    with tempfile.TemporaryDirectory(prefix="compare-disassemblers-") as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        return _compare(argv[1], cubins)


def _compare(root: str, cubins: list[Path]) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import triton

    from gluon_course.machine import compile as machine

    nvdisasm = machine._nvdisasm_path()
    if nvdisasm is None:
        print("no nvdisasm beside Triton's cuobjdump: Compiled.sass reads cuobjdump here, nothing to compare",
              file=sys.stderr)
        return 2
    print(f"cuobjdump: {triton.knobs.nvidia.cuobjdump.path}\nnvdisasm:  {nvdisasm} {' '.join(machine.NVDISASM_FLAGS)}")

    identical, differ, fallback = [], [], []
    targets: dict[str, int] = {}
    seconds = {"cuobjdump": 0.0, "nvdisasm": 0.0}
    instructions = 0
    for path in cubins:
        cubin = path.read_bytes()
        before = _children_user_cpu()
        old = machine._parse_sass(machine._cuobjdump(cubin, "-sass"))
        seconds["cuobjdump"] += _children_user_cpu() - before
        before = _children_user_cpu()
        raw = machine._tool_output(nvdisasm, "nvdisasm", cubin, *machine.NVDISASM_FLAGS)
        seconds["nvdisasm"] += _children_user_cpu() - before
        targets[_target(raw)] = targets.get(_target(raw), 0) + 1
        resolved = machine._resolve_labels(raw)
        name = str(path.relative_to(root))
        if resolved is None:
            fallback.append(name)
            continue
        # What Compiled.sass returns for this binary (the cached nvdisasm run, not a second one): the listing compared.
        assert machine._sass_listing(cubin) == resolved, name
        new = machine._parse_sass(resolved)
        if new == old:
            identical.append(name)
            instructions += len(new)
            continue
        at = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
        differ.append((name, len(old), len(new), old[at] if at < len(old) else None,
                       new[at] if at < len(new) else None))

    print(f"\n{len(cubins)} cubins ({', '.join(f'{n} {t}' for t, n in sorted(targets.items()))})")
    print(f"identical Instruction lists: {len(identical)} of {len(cubins)} ({instructions} instructions)")
    for name, n_old, n_new, a, b in differ:
        print(f"DIFFERENT {name}: {n_old} instructions from cuobjdump, {n_new} from nvdisasm; first difference:\n"
              f"  cuobjdump: {a}\n  nvdisasm:  {b}")
    for name in fallback:
        print(f"falls back to cuobjdump (listing not resolved): {name}")
    print(f"user CPU of the tools' runs: cuobjdump -sass {seconds['cuobjdump']:.1f} s, "
          f"nvdisasm {' '.join(machine.NVDISASM_FLAGS)} {seconds['nvdisasm']:.1f} s")
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
