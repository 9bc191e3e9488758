"""Cross-layer lint: the rule catalog over the derived intent and over parsed device configs."""
