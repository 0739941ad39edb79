"""The Britz control's reading (conf/init_gain.yaml): does the crossover d* follow the logits'
spread at init, sigma_0, rather than d_k? points: the runs as (variant, d_k, gain) points;
collapse: the rule's arithmetic; clauses: its verdicts as rows; render: its README."""
