"""The figures: their list, one look for all of them, and each figure drawn from the tables."""
