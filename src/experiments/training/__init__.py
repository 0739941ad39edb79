"""Training: the model around an attention variant, its initialisers, the pure
jitted train step, the loop that trains a group of lanes (seeds) as one
program, the lane axis over devices, and the memory estimate.

May import: attention, experiments.tasks. No file I/O here.
"""
