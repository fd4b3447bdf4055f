"""Layouts and memory access, on the host: no GPU needed.

- ``layouts``     a layout as a linear layout: who owns which element, register budget, pictures
- ``strides``     which axis is contiguous, and a layout that follows it
- ``coalescing``  the one coalescing model: vector width, per-lane addresses, sectors per request
- ``banks``       the one bank-conflict model: predicted from two layouts, read off compiled PTX
"""
