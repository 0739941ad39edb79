#!/usr/bin/env python
"""`make run`: probe, quick cost benchmark, quality_quick sweep, collect, plots,
report and dashboard. Usage: python scripts/main_job.py [results_dir=results] [sweep overrides]"""
from experiments.app.pipeline import main

if __name__ == "__main__":
    raise SystemExit(main())
