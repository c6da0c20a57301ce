"""Rating systems defined outside the worker's package, as a user would add one
(docs/adding-a-system.md): the worker loads them by `RATING_SYSTEM=package.module:SPEC`."""
