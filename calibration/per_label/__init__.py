"""The ``per_label`` guarantee: prediction sets, accepts and quality gates whose promises hold for every human
label (label-conditional conformal risk control with documents as the unit), and the skill test against the
no-information baseline that decides whether a judge may be accepted at all."""
