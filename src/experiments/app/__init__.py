"""The application: config schemas and validation, the pre-flight and its
one-line errors, interrupts, progress bars, runtime set-up (devices, threads,
compile cache), and the jobs behind the commands (train, bench, the main job,
the analysis entry).

May import every layer below it; only the entry points import it.
"""
