"""Analysis of a results folder: loading, statistics over seeds, figures, claim
verdicts, the report and the dashboard. Files only, no network, no training.

May import: attention, experiments.tasks, experiments.training, experiments.store,
experiments.instruments (the probe's theory).
"""
