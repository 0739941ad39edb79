"""Analysis of a results folder: figures, claim verdicts, report and dashboard (files only, no network)."""
