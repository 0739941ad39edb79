"""Statistics over seeds: t-intervals, per-seed slopes, power, Kaplan-Meier; pure numpy and scipy."""
