"""Instruments that measure without a training sweep: the init-time probe and
its closed-form theory, the cost benchmark (time and memory of scaled vs
additive), and the measurements of the speed benchmark.

May import: attention, experiments.tasks, experiments.training, experiments.store.
"""
