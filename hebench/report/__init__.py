"""Self-contained HTML reports of runs, library comparisons and attacks."""
