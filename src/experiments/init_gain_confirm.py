"""`python -m experiments.init_gain_confirm`: the Britz control's fresh seeds at each point's chosen
rate (app.init_gain_confirm_job; conf/init_gain.yaml declares the seeds and the reading)."""
from __future__ import annotations

from experiments.app import interrupt

interrupt.watch_imports()  # before the heavy imports below (see app.interrupt)

from experiments.app import init_gain_confirm_job  # noqa: E402
from experiments.app.command import make_main  # noqa: E402

main = make_main("init_gain", init_gain_confirm_job.run, init_gain_confirm_job.validate)

if __name__ == "__main__":
    main()
