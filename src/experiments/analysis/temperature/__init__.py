"""The temperature study's reading (conf/temperature.yaml declares it, experiments.temperature_report
writes it): per cell (task, n_keys, d_k) the validation AUC at every logit multiplier c of the paper's
1/sqrt(d_k), each at its own best rate (`grid`); the optimal multiplier c* from a declared smooth fit,
with a bootstrap interval over seeds (`optimum`); the law log2 c* = a + gamma log2 d_k + b log2 ln n
(`law`); what the paper's c = 1 leaves on the table on fresh seeds, and every other verdict, as rows
of one clause table (`clauses`), which the README, REPORT and dashboard are views of (`render`).
"""
