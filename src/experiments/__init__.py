"""The experiment harness around the `attention` model package.

The modules at this top level are the commands a user types
(`python -m experiments.train`, `.probe`, `.cost`, `.bench`, `.collect`,
`.plot`, `.report`, `.dashboard`); the folders below are the layers, lowest
first: tasks, training, store, instruments, analysis, app. Each imports only
the layers under it (tests/test_layers.py); see docs/ARCHITECTURE.md.
"""
