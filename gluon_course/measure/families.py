"""The linear layers of public transformer families, as GEMM shapes: what a dispatcher must pick well on when it was
tuned on other families (lesson 32).

Each family is read from its published configuration (the ``config.json`` of its released checkpoint): the hidden
size, the query and key/value heads and their size, the MLP's width and the vocabulary. A decoder layer runs, for M
tokens, ``x · Wᵀ`` for each of its projections, W being ``out_features × in_features`` as ``nn.Linear`` keeps it:

    q (heads·d × hidden), k and v (kv_heads·d × hidden), q/k/v fused, o (hidden × heads·d),
    gate and up (ffn × hidden), gate/up fused (2·ffn × hidden), down (hidden × ffn), the output layer (vocab × hidden)

so the GEMM is M × N × K with N = out_features and K = in_features. Tensor-parallel serving splits the heads, the
MLP's width and (for the output layer) the vocabulary over the GPUs: ``tp=8`` divides N of q/k/v/gate/up and K of
o/down by 8, which is how a 70B-class model's layers look on one GPU of eight.
"""
from __future__ import annotations

from dataclasses import dataclass

# The token counts a family is judged at: one token decoded, a small batch of decodes, a larger batch, a prefill
# chunk and a long prefill.
FAMILY_M = (1, 16, 128, 1024, 4096)
# The output layer is run for the last token of each sequence: at decode and small batches only.
OUTPUT_LAYER_M = (1, 16, 128)


@dataclass(frozen=True)
class Family:
    name: str
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    tp: int = 1                  # tensor-parallel degree: the shapes one GPU of ``tp`` runs
    source: str = ""             # the published configuration it is read from

    def projections(self) -> dict[str, tuple[int, int]]:
        """{projection: (N, K)} for one GPU, the duplicates (k and v, gate and up) named once."""
        t = self.tp
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        found = {"q": (q // t, self.hidden), "kv": (kv // t, self.hidden), "qkv": ((q + 2 * kv) // t, self.hidden),
                 "o": (self.hidden, q // t), "gate_up": (self.ffn // t, self.hidden),
                 "gate_up_fused": (2 * self.ffn // t, self.hidden), "down": (self.hidden, self.ffn // t),
                 "output": (self.vocab // t, self.hidden)}
        seen, unique = set(), {}
        for name, nk in found.items():            # a family whose q and o are both hidden × hidden lists it twice
            if nk not in seen:
                seen.add(nk)
                unique[name] = nk
        return unique

    def shapes(self) -> list[tuple[int, int, int, str]]:
        """(M, N, K, projection) at FAMILY_M (the output layer at OUTPUT_LAYER_M only)."""
        return [(m, n, k, name) for name, (n, k) in self.projections().items()
                for m in (OUTPUT_LAYER_M if name == "output" else FAMILY_M)]


HF = "its config.json on the Hugging Face Hub"
FAMILIES = {f.name: f for f in (
    Family("llama-3-8b", 4096, 32, 8, 128, 14336, 128256, source=f"meta-llama/Meta-Llama-3-8B, {HF}"),
    Family("qwen2.5-7b", 3584, 28, 4, 128, 18944, 152064, source=f"Qwen/Qwen2.5-7B, {HF}"),
    Family("gemma-2-9b", 3584, 16, 8, 256, 14336, 256000, source=f"google/gemma-2-9b, {HF}"),
    Family("llama-3.2-3b", 3072, 24, 8, 128, 8192, 128256, source=f"meta-llama/Llama-3.2-3B, {HF}"),
    Family("qwen2.5-1.5b", 1536, 12, 2, 128, 8960, 151936, source=f"Qwen/Qwen2.5-1.5B, {HF}"),
    Family("qwen2.5-14b", 5120, 40, 8, 128, 13824, 152064, source=f"Qwen/Qwen2.5-14B, {HF}"),
    Family("llama-3-70b-tp8", 8192, 64, 8, 128, 28672, 128256, tp=8,
           source=f"meta-llama/Meta-Llama-3-70B, {HF}; one GPU of eight under tensor parallelism"),
)}
