"""What a reader opens: REPORT.md and the self-contained dashboard.html."""
