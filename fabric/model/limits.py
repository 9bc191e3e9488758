"""Input limits shared by the loader (`fabric.model.source`) and the derive cache's key (`fabric.design.cachekey`),
which reads an inventory's files before anything else is imported."""

MAX_BYTES = 32 * 1024 * 1024  # one user file (an explicit 32k-GPU inventory is a few MB)
