"""NVIDIA's side of the toolkit: what only the NVIDIA lessons use.

- ``dispatch``  the tuned table that picks a GEMM configuration per shape (lesson 32), with its rule for the rest
"""
