"""Input limits shared by the loader (`fabric.model.source`, `fabric.model.userfile`) and the commands that read
files beside an inventory."""

MAX_BYTES = 32 * 1024 * 1024  # one user file (an explicit 32k-GPU inventory is a few MB)
