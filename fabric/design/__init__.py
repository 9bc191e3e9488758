"""Derivation: the inventory expanded into topology and per-device intent ("facts"). Pure, no I/O."""
