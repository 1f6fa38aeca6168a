"""Terminal rendering of summaries, threat tables, legends and link tables."""
