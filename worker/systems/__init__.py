"""The rating systems, one package each (`worker.systems.<name>`): its rules and state, the
state's Redis encoding (`codec`), its event encoder and reader (`events`), its traffic generator
(`traffic`) and its spec (`spec.SPEC`, a `worker.engine.spec.SystemSpec`), which gathers them for
the rest of the worker. `worker.systems.registry` lists the built-in systems and loads one from
outside the package (docs/adding-a-system.md)."""
