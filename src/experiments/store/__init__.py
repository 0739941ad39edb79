"""The run store: run ids, atomic writes, run folders and summaries, collecting
run folders into tables, and the W&B mirror of the local results.

May import: attention, experiments.tasks, experiments.training (it needs none
of them today). The files it writes are the contract in docs/ARCHITECTURE.md.
"""
