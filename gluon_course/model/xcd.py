"""Which XCD runs which tile: a model of how an MI300/MI350 hands out workgroups, and what that costs the L2 caches.

An MI300X or MI350/MI355 GPU is eight accelerator dies (XCDs), each with its own L2 cache (4 MB on CDNA 4, in AMD's
Hot Chips 2025 talk on the MI350) and its share of the CUs (32 per XCD on an MI355X's 256 CUs, 38 on an MI300X's
304). The hardware hands workgroups out round robin in the order of their ids: workgroup w runs on XCD ``w % 8``
(AMD's gfx950 Gluon tutorials, ``v9_beyond_hotloop``). A kernel chooses only which tile each workgroup id computes:
that is all lesson 29's remapping changes.

The model here:

* ``workgroup_tiles`` evaluates the kernel's own tile function (a ``@gluon.jit`` function, run on the host with
  numpy, as ``model.orders`` does) for every workgroup id: its (row, column) of tiles.
* ``xcd_strips`` counts, for each XCD and each *wave* of workgroups resident at once, the distinct row strips of A
  (BLOCK_M rows × K) and column strips of B (K × BLOCK_N columns) its tiles read. The workgroups of a wave start
  together and walk K together, so each XCD's L2 fetches each of its strips once per wave, a K step at a time
  (a K step of 18 strips of 256 × 64 fp16 is 18 × 32 KiB = 576 KiB, well inside a 4 MB L2), and reuses it for every
  tile of the wave on that XCD. Nothing is assumed to survive from one wave to the next.
* ``l2_fill_bytes`` is the sum: the bytes the eight L2s fetch from memory, under those assumptions. It is an
  estimate, not a measurement; AMD's counters for the same shapes are quoted beside it in lesson 29.
* ``grouped_strips`` is the count behind a group size: P tiles of grouped order inside one group of GM rows touch
  GM strips of A and ⌈P/GM⌉ of B; ``best_group_sizes`` the GM that make it least for P workgroups per XCD.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .orders import tile_order

XCDS = 8
CUS_PER_XCD = {"gfx950": 32, "gfx942": 38}   # MI355X: 256 CUs, MI300X: 304 CUs, over 8 XCDs


def xcd_of(workgroups: int, xcds: int = XCDS) -> np.ndarray:
    """The XCD each workgroup id runs on: round robin, ``w % xcds``."""
    return np.arange(workgroups) % xcds


def workgroup_tiles(fn, num_pid_m: int, num_pid_n: int, *args) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of tiles that each workgroup id 0 … num_pid_m·num_pid_n − 1 computes under
    ``fn(pid, num_pid_m, num_pid_n, *args)``."""
    return tile_order(fn, num_pid_m * num_pid_n, num_pid_m, num_pid_n, *args)


@dataclass(frozen=True)
class Strips:
    """What one XCD reads in one wave: distinct row strips of A and column strips of B, and its tiles."""
    wave: int
    xcd: int
    tiles: int
    a_strips: int
    b_strips: int

    @property
    def strips(self) -> int:
        return self.a_strips + self.b_strips


def xcd_strips(rows, cols, resident_per_xcd: int, xcds: int = XCDS) -> list[Strips]:
    """Per wave and XCD: the distinct rows and columns of tiles (strips of A and B) among its workgroups. A wave is
    the next ``resident_per_xcd × xcds`` workgroup ids (one workgroup per CU: lessons 24-29 fill a CU's LDS)."""
    rows, cols = np.asarray(rows), np.asarray(cols)
    per_wave = resident_per_xcd * xcds
    out = []
    for wave, start in enumerate(range(0, len(rows), per_wave)):
        ids = np.arange(start, min(start + per_wave, len(rows)))
        for x in range(xcds):
            mine = ids[ids % xcds == x]
            if len(mine):
                out.append(Strips(wave, x, len(mine), len(set(rows[mine].tolist())), len(set(cols[mine].tolist()))))
    return out


def l2_fill_bytes(rows, cols, K: int, BLOCK_M: int, BLOCK_N: int, element_bytes: int = 2,
                  resident_per_xcd: int = CUS_PER_XCD["gfx950"], xcds: int = XCDS) -> int:
    """The bytes the XCDs' L2 caches fetch from memory for A and B under the model above."""
    return sum((s.a_strips * BLOCK_M + s.b_strips * BLOCK_N) * K * element_bytes
               for s in xcd_strips(rows, cols, resident_per_xcd, xcds))


def most_strips(rows, cols, resident_per_xcd: int = CUS_PER_XCD["gfx950"], xcds: int = XCDS) -> int:
    """The most strips (of A and B together) any XCD reads in any wave."""
    return max(s.strips for s in xcd_strips(rows, cols, resident_per_xcd, xcds))


def grouped_strips(programs: int, group_m: int) -> int:
    """The strips of A and B that ``programs`` consecutive tiles of grouped order touch when they lie inside one group:
    ``group_m`` rows of tiles (strips of A) and ⌈programs / group_m⌉ columns (strips of B), since grouped order goes
    down a column of the group before the next. A run that straddles two groups touches more (``most_strips`` counts
    what a given order really touches)."""
    if programs < 1 or group_m < 1:
        raise ValueError(f"programs and group_m are positive, not {programs} and {group_m}")
    return group_m + -(-programs // group_m)


def best_group_sizes(programs: int, largest: int = 64) -> tuple[int, ...]:
    """The group sizes (1 … ``largest``) whose runs of ``programs`` tiles touch the fewest strips by
    ``grouped_strips``: GM + ⌈P/GM⌉ is least near GM = √P (4 to 8 for the 32 workgroups one gfx950 XCD runs at once)."""
    counts = {gm: grouped_strips(programs, gm) for gm in range(1, largest + 1)}
    fewest = min(counts.values())
    return tuple(gm for gm, n in counts.items() if n == fewest)
