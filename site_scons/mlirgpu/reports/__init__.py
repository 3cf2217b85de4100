"""CI artifacts made from the compiles' records: the manifest, baseline rules, human reports, the archive."""
