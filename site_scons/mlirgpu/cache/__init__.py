"""The stage cache: every stage's output by content, locally and in a shared Redis/Valkey tier."""
