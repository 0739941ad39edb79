"""`python -m experiments.temperature_confirm results_dir=R`: the temperature study's fresh seeds at
each cell's estimated optimum c* and at the paper's c = 1 (app.temperature_confirm_job;
conf/temperature.yaml declares the fit, the seeds and the gate)."""
from __future__ import annotations

from experiments.app import interrupt

interrupt.watch_imports()  # before the heavy imports below (see app.interrupt)

from experiments.app import temperature_confirm_job  # noqa: E402
from experiments.app.command import make_main  # noqa: E402

main = make_main("temperature", temperature_confirm_job.run, temperature_confirm_job.validate)

if __name__ == "__main__":
    main()
