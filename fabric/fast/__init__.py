"""Speed machinery, kept in one place: what makes the cold path of a large fabric fast and would otherwise be
scattered through the pure core. Nothing here changes a result; each piece has a plain equivalent that gives the
same output, slower.

- `batch`: the cyclic collector paused while ~10^6 objects that all stay are built (`gc_paused`), a large fabric
  frozen out of its reach for the rest of the command (`hold`), and work over both cores in forked processes
  (`fork_map`, `fork_each`, `Beside`).
- `blockyaml`: a one-pass reader of the plain block YAML that renderers and `nv config show` write; anything
  outside its subset goes to the hardened loader (`fabric.model.source`).
- `memo`: explicit memo tables that a caller creates and passes to a renderer or reader.
- `plain`: a deep copy of plain data (a parsed configuration) at a tenth of `copy.deepcopy`'s cost.

It imports nothing of `fabric` (the bottom layer of pyproject `[tool.importlinter]`), so every layer may use it;
the pure core (model, design, the renderers) reaches `gc`, `pickle` and `multiprocessing` only through it (a
forbidden contract there). Light on purpose: `fabric --version` imports it.
"""
