"""The verdict of each sub-claim, clause by clause, from the tables (see docs/CLAIM.md)."""
