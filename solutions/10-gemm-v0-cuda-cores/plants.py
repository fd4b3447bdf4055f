"""Planted mistakes of lesson 10: each must be rejected by the check whose key it names."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("the mask is dropped: nothing stops the last program at the end of the tensor",
          "mask = offsets < numel", "mask = offsets >= 0",
          rejected_by="signature_sm_90"),
]
