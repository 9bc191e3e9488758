"""NVIDIA Cumulus Linux (NVUE): the `set` tree as patch YAML and `nv set` lines, its parser, patch/apply push."""
