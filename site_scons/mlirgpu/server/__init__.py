"""The compile server: one warm process per user and installation that serves every front end's compiles."""
