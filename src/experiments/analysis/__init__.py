"""Analysis of a results folder, one room per question a reader has: stats/ (how
sure), tables/ (what was measured), lr/ (at which learning rate), results.py
(the tables the verdicts read), verdicts/ (does each sub-claim hold,
docs/CLAIM.md), figures/ (what it looks like), render/ (REPORT.md, the
dashboard). Rooms are layers in that order. Files only, no network, no training.

May import: attention, experiments.tasks, experiments.training, experiments.store,
experiments.instruments (the probe's theory).
"""
