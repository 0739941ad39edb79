"""The results folder read into analysis tables, and which runs count where (diverged runs)."""
