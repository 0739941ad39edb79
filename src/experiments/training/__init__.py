"""Training: the model around an attention variant (spec, blocks, model,
reassociate), its initialisers, the pure jitted train step, the group's
programs (compile) and fixed sets, and `loop.train_lanes`, the one way to
train a group of lanes (seeds x rates) as one program; the lane axis over
devices, and the memory estimate.

May import: attention, experiments.tasks. No file I/O here.
"""
